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
//! Who may send a request (`Host`, `Origin`, the token) is [`Access`]'s to say: the head's
//! `Host` and `Origin` are checked here, as the head is parsed; the token by the router,
//! which knows which paths need it.
//!
//! Reading (from a socket, against the clock) and parsing (of bytes already read) are
//! separate: [`head_len`], [`parse_head`] and [`body_len`] are pure functions of the bytes,
//! which the fuzz target drives with no socket (see `crate::fuzzing`).

use std::borrow::Cow;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::access::Access;

/// The limits of the server; see the module docs.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    pub(crate) max_head: usize,
    pub(crate) max_body: usize,
    pub(crate) io_timeout: Duration,
    pub(crate) max_connections: usize,
}

impl Default for Limits {
    /// 8 KiB heads, 64 KiB bodies, 5 s to send a request, 8 connections at once.
    fn default() -> Limits {
        Limits {
            max_head: 8 * 1024,
            max_body: 64 * 1024,
            io_timeout: Duration::from_secs(5),
            max_connections: 8,
        }
    }
}

/// A request as the router sees it.
#[derive(Debug)]
pub(crate) struct Request {
    pub(crate) method: String,
    /// The path, without the query.
    pub(crate) path: String,
    /// The query string after `?` (still percent-encoded), or empty.
    pub(crate) query: String,
    /// The `Authorization` header, if any (the token is checked by the router).
    pub(crate) authorization: Option<String>,
    pub(crate) body: Vec<u8>,
}

/// A request head, parsed and checked ([`parse_head`]).
#[derive(Debug)]
pub(crate) struct Head {
    pub(crate) method: String,
    pub(crate) path: String,
    pub(crate) query: String,
    pub(crate) authorization: Option<String>,
    /// The body's length, from `Content-Length` (0 without one).
    pub(crate) content_length: usize,
}

impl Head {
    /// The request, with its body.
    pub(crate) fn with_body(self, body: Vec<u8>) -> Request {
        Request {
            method: self.method,
            path: self.path,
            query: self.query,
            authorization: self.authorization,
            body,
        }
    }
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
        401 => "Unauthorized",
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
// Hand-written on purpose: a few hundred lines of std, no async runtime, bounded reads.
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
        access: Arc<Access>,
        handler: Arc<Handler>,
    ) -> io::Result<Server> {
        let addr = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let active = Arc::new(AtomicUsize::new(0));
        let accept = {
            let stop = stop.clone();
            std::thread::Builder::new()
                .name("runsync-inspect".into())
                .spawn(move || {
                    accept_loop(listener, limits, access, handler, stop, active);
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
    access: Arc<Access>,
    handler: Arc<Handler>,
    stop: Arc<AtomicBool>,
    active: Arc<AtomicUsize>,
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
        let access = access.clone();
        let spawned = std::thread::Builder::new()
            .name("runsync-inspect-conn".into())
            .stack_size(256 * 1024)
            .spawn(move || {
                let _guard = guard;
                serve_connection(stream, limits, &access, &*handler);
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

fn serve_connection(mut stream: TcpStream, limits: Limits, access: &Access, handler: &Handler) {
    let _ = stream.set_nodelay(true);
    let deadline = Instant::now() + limits.io_timeout;
    let response = match read_request(&mut stream, limits, deadline, access) {
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
         Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n{}\r\n",
        r.status,
        reason(r.status),
        r.content_type,
        r.body.len(),
        if r.status == 401 {
            "WWW-Authenticate: Bearer realm=\"runsync-inspect\"\r\n"
        } else {
            ""
        }
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

/// Reads one request: its head (at most [`Limits::max_head`] bytes), checked by
/// [`parse_head`], then its body, all before `deadline`.
fn read_request(
    stream: &mut TcpStream,
    limits: Limits,
    deadline: Instant,
    access: &Access,
) -> Result<Request, ReadError> {
    let mut buf = vec![0u8; limits.max_head];
    let mut len = 0;
    let head_len = loop {
        if let Some(n) = head_len(&buf[..len], limits).map_err(ReadError::Respond)? {
            break n;
        }
        let n = read_some(stream, &mut buf[len..], deadline)?;
        if n == 0 {
            // Closed before a whole head: nothing to answer.
            return Err(ReadError::Close);
        }
        len += n;
    };
    let head = parse_head(&buf[..head_len], access).map_err(ReadError::Respond)?;
    let want = body_len(&head, limits).map_err(ReadError::Respond)?;
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
    Ok(head.with_body(body))
}

/// The length of the head at the start of `bytes` (up to and including its blank line),
/// `None` if it is not whole yet, or the answer to a head that can never be whole or
/// valid: `431` once `max_head` bytes hold no whole head, or more than 32 headers; `400`
/// for what is not HTTP/1.x.
pub(crate) fn head_len(bytes: &[u8], limits: Limits) -> Result<Option<usize>, Response> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    match req.parse(bytes) {
        Ok(httparse::Status::Complete(n)) if n <= limits.max_head => Ok(Some(n)),
        Ok(httparse::Status::Partial) if bytes.len() < limits.max_head => Ok(None),
        Ok(_) => Err(Response::error(
            431,
            format!("the request head is larger than {} bytes", limits.max_head),
        )),
        Err(httparse::Error::TooManyHeaders) => Err(Response::error(
            431,
            format!("more than {MAX_HEADERS} headers"),
        )),
        Err(e) => Err(Response::error(
            400,
            format!("not an HTTP/1.1 request: {e}"),
        )),
    }
}

/// Parses a whole head (as [`head_len`] measured it) and checks its `Host` and `Origin`
/// against `access`, and its `Content-Length` (digits only; conflicting values refused).
/// Chunked bodies are refused (`411`).
pub(crate) fn parse_head(bytes: &[u8], access: &Access) -> Result<Head, Response> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    req.parse(bytes)
        .map_err(|e| Response::error(400, format!("not an HTTP/1.1 request: {e}")))?;
    let method = req.method.unwrap_or_default().to_owned();
    let target = req.path.unwrap_or_default();
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let (path, query) = (path.to_owned(), query.to_owned());

    let mut content_length: Option<usize> = None;
    let mut host: Option<&str> = None;
    let mut origin: Option<&str> = None;
    let mut authorization: Option<&str> = None;
    for h in req.headers.iter() {
        let value = std::str::from_utf8(h.value)
            .map_err(|_| Response::error(400, format!("header `{}` is not UTF-8", h.name)))?
            .trim();
        let once = |seen: Option<&str>| {
            if seen.is_some_and(|s| s != value) {
                Err(Response::error(
                    400,
                    format!("conflicting `{}` headers", h.name),
                ))
            } else {
                Ok(Some(value))
            }
        };
        if h.name.eq_ignore_ascii_case("content-length") {
            let n = parse_content_length(value)?;
            if content_length.is_some_and(|m| m != n) {
                return Err(Response::error(400, "conflicting Content-Length headers"));
            }
            content_length = Some(n);
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            return Err(Response::error(
                411,
                "chunked bodies are not accepted: send a Content-Length",
            ));
        } else if h.name.eq_ignore_ascii_case("host") {
            host = once(host)?;
        } else if h.name.eq_ignore_ascii_case("origin") {
            origin = once(origin)?;
        } else if h.name.eq_ignore_ascii_case("authorization") {
            authorization = once(authorization)?;
        }
    }
    access.check_host(host)?;
    Access::check_origin(origin, host)?;
    Ok(Head {
        method,
        path,
        query,
        authorization: authorization.map(str::to_owned),
        content_length: content_length.unwrap_or(0),
    })
}

/// A `Content-Length`: decimal digits only (no sign, no spaces), that fit a `usize`.
fn parse_content_length(value: &str) -> Result<usize, Response> {
    let digits =
        !value.is_empty() && value.len() <= 20 && value.bytes().all(|b| b.is_ascii_digit());
    digits
        .then(|| value.parse::<usize>().ok())
        .flatten()
        .ok_or_else(|| {
            Response::error(
                400,
                format!(
                    "bad Content-Length `{}`: a number of bytes",
                    value.chars().take(40).collect::<String>()
                ),
            )
        })
}

/// The body's length, if the limits accept it (`413` otherwise).
pub(crate) fn body_len(head: &Head, limits: Limits) -> Result<usize, Response> {
    let want = head.content_length;
    if want > limits.max_body {
        return Err(Response::error(
            413,
            format!(
                "the body is {want} bytes; the inspector accepts at most {}",
                limits.max_body
            ),
        ));
    }
    Ok(want)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> Limits {
        Limits {
            max_head: 64,
            max_body: 10,
            io_timeout: Duration::from_secs(1),
            max_connections: 1,
        }
    }

    #[test]
    fn heads_are_measured_and_bounded() {
        let l = limits();
        assert_eq!(head_len(b"GET / HTTP/1.1\r\n", l).unwrap(), None);
        assert_eq!(
            head_len(b"GET / HTTP/1.1\r\n\r\nbody", l).unwrap(),
            Some(18)
        );
        let long = format!("GET / HTTP/1.1\r\nX: {}\r\n\r\n", "a".repeat(60));
        assert_eq!(head_len(long.as_bytes(), l).unwrap_err().status, 431);
        assert_eq!(head_len(&long.as_bytes()[..64], l).unwrap_err().status, 431);
        assert_eq!(
            head_len(b"\x00\x01 garbage\r\n\r\n", l).unwrap_err().status,
            400
        );
    }

    #[test]
    fn content_lengths_are_plain_digits() {
        let a = Access::loopback();
        let head = |cl: &str| {
            parse_head(
                format!("POST /api/step HTTP/1.1\r\nContent-Length: {cl}\r\n\r\n").as_bytes(),
                &a,
            )
        };
        assert_eq!(head("7").unwrap().content_length, 7);
        for bad in [
            "+7",
            "-1",
            "0x10",
            "7 7",
            "",
            "99999999999999999999",
            "18446744073709551616",
        ] {
            assert_eq!(head(bad).unwrap_err().status, 400, "{bad:?}");
        }
        let two = b"POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n";
        assert_eq!(parse_head(two, &a).unwrap_err().status, 400);
        let hosts = b"GET / HTTP/1.1\r\nHost: localhost\r\nHost: evil.example\r\n\r\n";
        assert_eq!(parse_head(hosts, &a).unwrap_err().status, 400);
        let big = parse_head(b"POST / HTTP/1.1\r\nContent-Length: 11\r\n\r\n", &a).unwrap();
        assert_eq!(body_len(&big, limits()).unwrap_err().status, 413);
    }
}
