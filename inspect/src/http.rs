//! A small HTTP/1.1 server with hard limits, for a server that lives inside a game.
//!
//! One accept thread; each connection gets a thread of its own, at most
//! [`Limits::max_connections`] at once (a connection beyond that is answered `503` and
//! closed by the accept thread). A connection carries one request (`Connection: close`):
//! its head may be at most [`Limits::max_head`] bytes and its body at most
//! [`Limits::max_body`] (`Content-Length` only; chunked bodies are refused), and the whole
//! request must arrive within [`Limits::io_timeout`] — a client that sends a byte a
//! second is cut off at the deadline, not kept alive by each byte. Parsing is `httparse`'s.
//!
//! Why not a server crate: the obvious blocking one, `tiny_http` 0.12, reads a header line
//! without a length limit, sets no socket timeouts, and starts a thread for every
//! connection it cannot hand to an idle one, without bound — each a way for a hostile (or
//! merely broken) client on the machine to take memory or threads from the game. Those
//! limits are the whole point here, and with a well-tested parser they take a few hundred
//! lines of std code; an async runtime would not earn its place for a handful of requests
//! a second.
//!
//! Requests that cross sites are refused: the server checks `Host` (a DNS-rebinding page
//! cannot name a loopback address there) when it is bound to a loopback address, and any
//! `Origin` header (which browsers send on cross-origin requests) must name the same host.

use std::borrow::Cow;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The limits of the server; see the module docs.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    pub(crate) max_head: usize,
    pub(crate) max_body: usize,
    pub(crate) io_timeout: Duration,
    pub(crate) max_connections: usize,
}

/// A request as the router sees it.
#[derive(Debug)]
pub(crate) struct Request {
    pub(crate) method: String,
    /// The path, without the query.
    pub(crate) path: String,
    /// The query string after `?` (still percent-encoded), or empty.
    pub(crate) query: String,
    pub(crate) body: Vec<u8>,
}

/// A response: status, content type, body.
#[derive(Debug)]
pub(crate) struct Response {
    pub(crate) status: u16,
    pub(crate) content_type: &'static str,
    pub(crate) body: Cow<'static, [u8]>,
}

impl Response {
    /// A JSON response.
    pub(crate) fn json(status: u16, value: &impl serde::Serialize) -> Response {
        let body = serde_json::to_vec(value).expect("the inspector's replies serialise");
        Response {
            status,
            content_type: "application/json",
            body: Cow::Owned(body),
        }
    }

    /// An error: `{"error": message}` with a 4xx or 5xx status.
    pub(crate) fn error(status: u16, message: impl Into<String>) -> Response {
        #[derive(serde::Serialize)]
        struct Error {
            error: String,
            status: u16,
        }
        Response::json(
            status,
            &Error {
                error: message.into(),
                status,
            },
        )
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        409 => "Conflict",
        411 => "Length Required",
        413 => "Content Too Large",
        414 => "URI Too Long",
        415 => "Unsupported Media Type",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Unknown",
    }
}

/// The handler: turns a request into a response, on the connection's thread.
pub(crate) type Handler = dyn Fn(Request) -> Response + Send + Sync;

/// The running server; dropping it stops accepting (connections in flight finish by
/// themselves, within their timeouts).
pub(crate) struct Server {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
}

impl Server {
    /// Starts serving `listener` on a background thread.
    pub(crate) fn start(
        listener: TcpListener,
        limits: Limits,
        handler: Arc<Handler>,
    ) -> io::Result<Server> {
        let addr = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let active = Arc::new(AtomicUsize::new(0));
        let check_host = addr.ip().is_loopback();
        let accept = {
            let stop = stop.clone();
            std::thread::Builder::new()
                .name("runsync-inspect".into())
                .spawn(move || {
                    accept_loop(listener, limits, handler, stop, active, check_host);
                })?
        };
        Ok(Server {
            addr,
            stop,
            accept: Some(accept),
        })
    }

    /// The address it listens on.
    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the blocking `accept` with a connection of our own.
        let mut wake = self.addr;
        if wake.ip().is_unspecified() {
            wake.set_ip(match wake {
                SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
                SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
            });
        }
        let woke = TcpStream::connect_timeout(&wake, Duration::from_secs(1)).is_ok();
        if let Some(accept) = self.accept.take() {
            if woke {
                let _ = accept.join();
            }
            // Else leave the thread: it ends at the next connection.
        }
    }
}

/// Decrements the count of active connections when a connection's thread ends.
struct Active(Arc<AtomicUsize>);

impl Drop for Active {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

fn accept_loop(
    listener: TcpListener,
    limits: Limits,
    handler: Arc<Handler>,
    stop: Arc<AtomicBool>,
    active: Arc<AtomicUsize>,
    check_host: bool,
) {
    for conn in listener.incoming() {
        if stop.load(Ordering::SeqCst) {
            return;
        }
        let stream = match conn {
            Ok(s) => s,
            Err(_) => {
                // Out of file descriptors, or a connection reset before it was accepted:
                // do not spin on it.
                std::thread::sleep(Duration::from_millis(10));
                continue;
            }
        };
        if active.fetch_add(1, Ordering::SeqCst) >= limits.max_connections {
            let guard = Active(active.clone());
            refuse_busy(stream, limits.max_connections);
            drop(guard);
            continue;
        }
        let guard = Active(active.clone());
        let handler = handler.clone();
        let spawned = std::thread::Builder::new()
            .name("runsync-inspect-conn".into())
            .stack_size(256 * 1024)
            .spawn(move || {
                let _guard = guard;
                serve_connection(stream, limits, &*handler, check_host);
            });
        // A failed spawn drops the closure, its guard and the stream: the client sees
        // the connection close.
        drop(spawned);
    }
}

fn refuse_busy(mut stream: TcpStream, max: usize) {
    let _ = stream.set_write_timeout(Some(Duration::from_millis(100)));
    let response = Response::error(
        503,
        format!("too many connections to the inspector (at most {max} at once); retry"),
    );
    write_response(&mut stream, &response);
    // Read what has already arrived (without waiting: this is the accept thread), so the
    // close is not a reset that could cost the client the answer.
    let _ = stream.shutdown(Shutdown::Write);
    if stream.set_nonblocking(true).is_ok() {
        let mut sink = [0u8; 4096];
        for _ in 0..16 {
            if !matches!(stream.read(&mut sink), Ok(n) if n > 0) {
                break;
            }
        }
    }
}

/// What a failed read leads to: an answer, or just closing.
enum ReadError {
    Respond(Response),
    Close,
}

fn serve_connection(mut stream: TcpStream, limits: Limits, handler: &Handler, check_host: bool) {
    let _ = stream.set_nodelay(true);
    let deadline = Instant::now() + limits.io_timeout;
    let response = match read_request(&mut stream, limits, deadline, check_host) {
        Ok(request) => handler(request),
        Err(ReadError::Respond(r)) => r,
        Err(ReadError::Close) => return,
    };
    let _ = stream.set_write_timeout(Some(limits.io_timeout));
    write_response(&mut stream, &response);
    // Close gracefully: a client whose body we did not read (413) would otherwise get a
    // reset and might lose the answer. Drain a bounded amount for a short time.
    let _ = stream.shutdown(Shutdown::Write);
    let _ = stream.set_read_timeout(Some(Duration::from_millis(100)));
    let mut sink = [0u8; 4096];
    let mut drained = 0;
    while drained < 1 << 20 {
        match stream.read(&mut sink) {
            Ok(0) | Err(_) => break,
            Ok(n) => drained += n,
        }
    }
}

fn write_response(stream: &mut TcpStream, r: &Response) {
    let head = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n\
         Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n\r\n",
        r.status,
        reason(r.status),
        r.content_type,
        r.body.len()
    );
    let _ = stream
        .write_all(head.as_bytes())
        .and_then(|()| stream.write_all(&r.body))
        .and_then(|()| stream.flush());
}

/// Reads into `buf` until the deadline; `Ok(0)` at end of stream.
fn read_some(
    stream: &mut TcpStream,
    buf: &mut [u8],
    deadline: Instant,
) -> Result<usize, ReadError> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(timeout());
    }
    stream
        .set_read_timeout(Some(left))
        .map_err(|_| ReadError::Close)?;
    loop {
        match stream.read(buf) {
            Ok(n) => return Ok(n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                return Err(timeout());
            }
            Err(_) => return Err(ReadError::Close),
        }
    }
}

fn timeout() -> ReadError {
    ReadError::Respond(Response::error(
        408,
        "the request did not arrive in time; send it whole, at once",
    ))
}

fn bad(status: u16, message: impl Into<String>) -> ReadError {
    ReadError::Respond(Response::error(status, message))
}

const MAX_HEADERS: usize = 32;

fn read_request(
    stream: &mut TcpStream,
    limits: Limits,
    deadline: Instant,
    check_host: bool,
) -> Result<Request, ReadError> {
    let mut buf = vec![0u8; limits.max_head];
    let mut len = 0;
    let head_len = loop {
        if len == buf.len() {
            return Err(bad(
                431,
                format!("the request head is larger than {} bytes", limits.max_head),
            ));
        }
        let n = read_some(stream, &mut buf[len..], deadline)?;
        if n == 0 {
            // Closed before a whole head: nothing to answer.
            return Err(ReadError::Close);
        }
        len += n;
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut req = httparse::Request::new(&mut headers);
        match req.parse(&buf[..len]) {
            Ok(httparse::Status::Complete(n)) => break n,
            Ok(httparse::Status::Partial) => continue,
            Err(httparse::Error::TooManyHeaders) => {
                return Err(bad(431, format!("more than {MAX_HEADERS} headers")));
            }
            Err(e) => return Err(bad(400, format!("not an HTTP/1.1 request: {e}"))),
        }
    };
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    req.parse(&buf[..head_len])
        .map_err(|e| bad(400, format!("not an HTTP/1.1 request: {e}")))?;
    let method = req.method.unwrap_or_default().to_owned();
    let target = req.path.unwrap_or_default();
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let (path, query) = (path.to_owned(), query.to_owned());

    let mut content_length: Option<usize> = None;
    let mut host: Option<&str> = None;
    let mut origin: Option<&str> = None;
    for h in req.headers.iter() {
        let value = std::str::from_utf8(h.value)
            .map_err(|_| bad(400, format!("header `{}` is not UTF-8", h.name)))?
            .trim();
        if h.name.eq_ignore_ascii_case("content-length") {
            let n: usize = value
                .parse()
                .map_err(|_| bad(400, format!("bad Content-Length `{value}`")))?;
            if content_length.is_some_and(|m| m != n) {
                return Err(bad(400, "conflicting Content-Length headers"));
            }
            content_length = Some(n);
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            return Err(bad(
                411,
                "chunked bodies are not accepted: send a Content-Length",
            ));
        } else if h.name.eq_ignore_ascii_case("host") {
            host = Some(value);
        } else if h.name.eq_ignore_ascii_case("origin") {
            origin = Some(value);
        }
    }
    if check_host {
        if let Some(host) = host {
            if !is_loopback_host(host) {
                return Err(bad(
                    403,
                    format!(
                        "Host `{host}` is not a loopback name: the inspector answers only \
                         localhost, 127.0.0.1 or [::1]"
                    ),
                ));
            }
        }
    }
    if let Some(origin) = origin {
        let same = host.is_some_and(|h| origin.strip_prefix("http://") == Some(h));
        if !same {
            return Err(bad(
                403,
                format!("cross-origin request from `{origin}` refused"),
            ));
        }
    }

    let want = content_length.unwrap_or(0);
    if want > limits.max_body {
        return Err(bad(
            413,
            format!(
                "the body is {want} bytes; the inspector accepts at most {}",
                limits.max_body
            ),
        ));
    }
    let mut body = Vec::with_capacity(want);
    let have = (len - head_len).min(want);
    body.extend_from_slice(&buf[head_len..head_len + have]);
    drop(buf);
    let mut chunk = [0u8; 4096];
    while body.len() < want {
        let room = (want - body.len()).min(chunk.len());
        let n = read_some(stream, &mut chunk[..room], deadline)?;
        if n == 0 {
            return Err(bad(
                400,
                format!("the body ended after {} of its {want} bytes", body.len()),
            ));
        }
        body.extend_from_slice(&chunk[..n]);
    }
    Ok(Request {
        method,
        path,
        query,
        body,
    })
}

/// Whether a `Host` header names this machine: `localhost`, `127.x.y.z` or `[::1]`, with
/// or without a port.
fn is_loopback_host(host: &str) -> bool {
    let name = if let Some(rest) = host.strip_prefix('[') {
        match rest.split_once(']') {
            Some((ip, _)) => ip,
            None => return false,
        }
    } else {
        host.rsplit_once(':').map_or(host, |(name, _)| name)
    };
    name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::is_loopback_host;

    #[test]
    fn loopback_hosts() {
        for h in [
            "localhost",
            "localhost:80",
            "127.0.0.1:7070",
            "127.1.2.3",
            "[::1]:9",
        ] {
            assert!(is_loopback_host(h), "{h}");
        }
        for h in [
            "evil.example",
            "evil.example:80",
            "10.0.0.1",
            "[::2]:1",
            "[::1",
            "",
        ] {
            assert!(!is_loopback_host(h), "{h}");
        }
    }
}
