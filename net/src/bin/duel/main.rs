//! `duel`: a game of two to four players over UDP, one process per player, with rollback
//! netcode.
//!
//! ```text
//! # two terminals on one machine:
//! cargo run -p runsync-net --bin duel -- --local 0 --bind 127.0.0.1:7000 --peer 127.0.0.1:7001
//! cargo run -p runsync-net --bin duel -- --local 1 --bind 127.0.0.1:7001 --peer 127.0.0.1:7000
//! # three players: the same list of every player's address in each, its own included
//! duel --players 3 --local 0 --bind 127.0.0.1:7000 --peers 127.0.0.1:7000,127.0.0.1:7001,127.0.0.1:7002
//! duel --players 3 --local 1 --bind 127.0.0.1:7001 --peers 127.0.0.1:7000,127.0.0.1:7001,127.0.0.1:7002
//! duel --players 3 --local 2 --bind 127.0.0.1:7002 --peers 127.0.0.1:7000,127.0.0.1:7001,127.0.0.1:7002
//! ```
//!
//! Interactive (the default, Unix terminals): WASD or the arrow keys move, space fires, q
//! quits. `--headless` plays the scripted inputs instead and prints one line per
//! confirmed frame, `confirmed FRAME CHECKSUM` (hex), then a `done` line with the
//! session's counters; two headless peers must print the same lines. `--truth` prints
//! the lines a single process playing both scripts computes, for `diff`.
//!
//! `--record FILE` writes the match as a runsync replay of its confirmed frames;
//! `duel --replay FILE` plays one offline and prints the same `confirmed` lines the live
//! peers printed.
//!
//! `--key KEY` (the same on both) seals every datagram with the match's key, so no one
//! else can send the peers anything they read; `duel --new-key` prints a fresh one.
//!
//! Spectators: a player started with `--spectators ADDR[,ADDR..]` hosts them, forwarding
//! every confirmed input; `duel --spectate HOST_ADDR --bind ADDR` watches (`--headless`:
//! prints the players' `confirmed FRAME CHECKSUM` lines). The game starts once the
//! spectators are there too.
//!
//! `--inspect ADDR` serves the live inspector, read-only, on a player or a spectator: a
//! runtime of its own runs every confirmed frame with the match's confirmed inputs
//! (headless: prints `inspector URL`, and `inspector differs at frame N` if its checksum
//! ever parts from the match's).

mod game;

use std::io::{BufRead, Write};
use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::error::ErrorKind;
use clap::{CommandFactory, Parser};
use game::Pad;
use runsync_net::{
    NetEvent, NetSession, NetSim, NetSimConfig, NetSpectator, SessionKey, SpectatorTick, Tick,
    TransportProbe, UdpTransport,
};

/// The command line: every option with its help line; the rules between options (which
/// are required together, which exclude each other) are `parse`'s.
#[derive(Parser)]
#[command(
    name = "duel",
    about = "A game of two to four players over UDP, one process per player, with rollback \
             netcode",
    long_about = None,
    override_usage = "\
duel --local <0|1> --bind <ADDR> --peer <ADDR|-> [options]
       duel --players N --local K --bind <ADDR> --peers <ADDR0,ADDR1,..|-> [options]
       duel --spectate <HOST_ADDR|-> --bind <ADDR> [--players N] [options]
       duel --truth [--players N] [--frames N] [--delay N]
       duel --new-key
       duel --replay FILE [--workers N]",
    // A later option overrides an earlier one (the tests put defaults first).
    args_override_self = true
)]
struct Cli {
    /// players in the game, 2 to 4, one process each; every process of a match must be
    /// given the same N
    #[arg(long, value_name = "N", default_value_t = 2, value_parser = players)]
    players: usize,
    /// which player this process plays (0 to N-1)
    #[arg(long, value_name = "K")]
    local: Option<usize>,
    /// the UDP address to bind (127.0.0.1:0 picks a free port)
    #[arg(long, value_name = "ADDR")]
    bind: Option<String>,
    /// two players: the other player's address; `-` reads it from the first line of
    /// standard input, after printing `bound ADDR`
    #[arg(long, value_name = "ADDR")]
    peer: Option<String>,
    /// every player's address in player order, comma-separated, this process's own
    /// (entry K, where the others reach it: --bind's address) included, one address per
    /// player; the same list for every process. `-` reads the list from the first line of
    /// standard input, after printing `bound ADDR`
    #[arg(long, value_name = "LIST")]
    peers: Option<String>,
    /// host spectators: their addresses, comma-separated; this player forwards every
    /// confirmed input to each (each runs --spectate with this process's address). The
    /// game starts once they are there too
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = address)]
    spectators: Vec<SocketAddr>,
    /// watch without playing, through the player at ADDR (the host, whose --spectators
    /// lists this process's --bind address); `-` reads ADDR from the first line of
    /// standard input, after printing `bound ADDR`. --headless prints the players'
    /// `confirmed` lines, up to --frames; exit code 2 if the host leaves or --timeout
    /// passes first
    #[arg(long, value_name = "ADDR")]
    spectate: Option<String>,
    /// the match's shared key (64 hex digits from --new-key, or a passphrase): every
    /// datagram is sealed with it, and one that is not is dropped; every peer must give
    /// the same key. Without it, anyone who can send datagrams from the peer's address
    /// reaches the session
    #[arg(long, value_name = "KEY", value_parser = key, allow_hyphen_values = true)]
    key: Option<SessionKey>,
    /// print a fresh random key and exit
    #[arg(long)]
    new_key: bool,
    /// a test switch: in frame F this peer's game nudges its own ship one unit, so it
    /// parts from the others'; every peer then reports the desync on stderr and exits
    /// with status 3
    #[arg(long, value_name = "F")]
    desync_at: Option<u64>,
    /// on a desync, write this peer's save of the frame that differs to DIR (and its
    /// report); with the other peer's save there too (the same DIR on one machine), the
    /// report names the entities and values that differ
    #[arg(long, value_name = "DIR")]
    desync_dir: Option<std::path::PathBuf>,
    /// serve the live inspector at ADDR (127.0.0.1:0: a free port on loopback), watching
    /// the match read-only, from a player or a spectator (--spectate): a runtime of its
    /// own runs every confirmed frame (timeline, entities, picture, who wrote what); it
    /// never pauses or steers the match, or the spectator's own runtime
    #[arg(long, value_name = "ADDR")]
    inspect: Option<String>,
    /// write the match to FILE as a replay of its confirmed frames (every player's input
    /// and the checksum after each frame), when it ends
    #[arg(long, value_name = "FILE")]
    record: Option<String>,
    /// no network: play a recorded match and print its `confirmed FRAME CHECKSUM` lines
    /// (each checked against the recording); exit code 3 and a report on stderr if the
    /// game here plays it differently
    #[arg(long, value_name = "FILE")]
    replay: Option<String>,
    /// play scripted inputs; print `confirmed FRAME CHECKSUM` per confirmed frame
    #[arg(long)]
    headless: bool,
    /// headless: stop after N confirmed frames
    #[arg(long, value_name = "N", default_value_t = 600)]
    frames: u64,
    /// input delay in frames
    #[arg(long, value_name = "N", default_value_t = 2)]
    delay: usize,
    /// worker threads of the runtime
    #[arg(long, value_name = "N", default_value_t = 2)]
    workers: usize,
    /// headless: give up after S seconds, exit code 2
    #[arg(long, value_name = "S", default_value = "60", value_parser = seconds)]
    timeout: Duration,
    /// headless: keep ticking S seconds after the last frame, so the peer gets our last
    /// inputs
    #[arg(long, value_name = "S", default_value = "1", value_parser = seconds)]
    linger: Duration,
    /// play over a bad network: what this peer receives is delayed, jittered, lost,
    /// duplicated and reordered as SPEC says,
    /// `latency=MS,jitter=MS,loss=PCT,dup=PCT,reorder=PCT,seed=N` (any of them; MS up to
    /// 10000, PCT 0 to 100); the `done` line adds its counts
    #[arg(long, value_name = "SPEC")]
    net_sim: Option<NetSimConfig>,
    /// no network: print the `confirmed` lines of every player's script played in one
    /// process (what the headless peers must print; with --players N, for N players)
    #[arg(long)]
    truth: bool,
}

/// `--players`: 2 to [`game::MAX_PLAYERS`].
fn players(v: &str) -> Result<usize, String> {
    let n: usize = v.parse().map_err(|e| format!("{e}"))?;
    if !(2..=game::MAX_PLAYERS).contains(&n) {
        return Err(format!("a duel has 2 to {} players", game::MAX_PLAYERS));
    }
    Ok(n)
}

/// An entry of `--spectators`, spaces around it allowed.
fn address(v: &str) -> Result<SocketAddr, std::net::AddrParseError> {
    v.trim().parse()
}

/// `--key`: 64 hex digits are the key itself; anything else is a passphrase.
fn key(v: &str) -> Result<SessionKey, String> {
    if v.len() == 64 {
        SessionKey::from_hex(v)
    } else {
        Ok(SessionKey::derive(v))
    }
}

/// `--timeout`, `--linger`: whole seconds.
fn seconds(v: &str) -> Result<Duration, std::num::ParseIntError> {
    v.parse().map(Duration::from_secs)
}

/// The options, checked together.
struct Args {
    players: usize,
    local: usize,
    bind: String,
    peer: String,
    peers: String,
    headless: bool,
    truth: bool,
    frames: u64,
    delay: usize,
    workers: usize,
    timeout: Duration,
    linger: Duration,
    key: Option<SessionKey>,
    new_key: bool,
    net_sim: Option<NetSimConfig>,
    record: Option<String>,
    replay: Option<String>,
    desync_at: Option<u64>,
    desync_dir: Option<std::path::PathBuf>,
    inspect: Option<String>,
    spectators: Vec<SocketAddr>,
    spectate: String,
}

/// The command line parsed and its rules between options checked; an error (or the
/// help) is clap's, ready to print.
fn parse() -> Result<Args, clap::Error> {
    parse_from(std::env::args_os())
}

/// [`parse`] of `args` (the program's name first).
fn parse_from(
    args: impl IntoIterator<Item = impl Into<std::ffi::OsString> + Clone>,
) -> Result<Args, clap::Error> {
    let cli = Cli::try_parse_from(args)?;
    let a = Args {
        players: cli.players,
        local: cli.local.unwrap_or(usize::MAX),
        bind: cli.bind.unwrap_or_default(),
        peer: cli.peer.unwrap_or_default(),
        peers: cli.peers.unwrap_or_default(),
        headless: cli.headless,
        truth: cli.truth,
        frames: cli.frames,
        delay: cli.delay,
        workers: cli.workers,
        timeout: cli.timeout,
        linger: cli.linger,
        key: cli.key,
        new_key: cli.new_key,
        net_sim: cli.net_sim,
        record: cli.record,
        replay: cli.replay,
        desync_at: cli.desync_at,
        desync_dir: cli.desync_dir,
        inspect: cli.inspect,
        spectators: cli.spectators,
        spectate: cli.spectate.unwrap_or_default(),
    };
    let error = |kind, message: String| Err(Cli::command().error(kind, message));
    if a.truth || a.new_key || a.replay.is_some() {
        return Ok(a);
    }
    if !a.spectate.is_empty() {
        if a.bind.is_empty() {
            return error(
                ErrorKind::MissingRequiredArgument,
                "--spectate needs --bind".to_owned(),
            );
        }
        if a.local != usize::MAX || !a.spectators.is_empty() {
            return error(
                ErrorKind::ArgumentConflict,
                "a spectator (--spectate) plays no player and hosts no one".to_owned(),
            );
        }
        return Ok(a);
    }
    let n = a.players;
    if a.local != usize::MAX && a.local >= n {
        return error(
            ErrorKind::ValueValidation,
            format!(
                "--local {}: a game of {n} players has players 0 to {}",
                a.local,
                n - 1
            ),
        );
    }
    if a.local >= n || a.bind.is_empty() || (a.peer.is_empty() && a.peers.is_empty()) {
        return error(
            ErrorKind::MissingRequiredArgument,
            format!(
                "--local (0 to {}), --bind and --peer (two players) or --peers (every \
                 player's address) are required",
                n - 1
            ),
        );
    }
    if !a.peer.is_empty() && !a.peers.is_empty() {
        return error(
            ErrorKind::ArgumentConflict,
            "give --peer (two players) or --peers (every player), not both".to_owned(),
        );
    }
    if !a.peer.is_empty() && n != 2 {
        return error(
            ErrorKind::ArgumentConflict,
            format!(
                "--peer is the two-player form; with --players {n} give --peers \
                 ADDR0,..,ADDR{}: every player's address in player order, this process's \
                 own included",
                n - 1
            ),
        );
    }
    Ok(a)
}

/// The addresses of `--peers` (or the line read for `--peers -`): one per player, in
/// player order, entry `local` where this process is reached (bound to `bound`), no
/// address twice (each process plays one player).
fn peer_list(
    list: &str,
    players: usize,
    local: usize,
    bound: SocketAddr,
) -> Result<Vec<SocketAddr>, String> {
    let entries: Vec<&str> = list.trim().split(',').map(str::trim).collect();
    if entries.len() != players {
        return Err(format!(
            "--peers has {} address(es); a game of {players} players needs {players}, one \
             per player in player order, this process's own (entry {local}) included",
            entries.len()
        ));
    }
    let mut addrs: Vec<SocketAddr> = Vec::with_capacity(players);
    for (i, e) in entries.iter().enumerate() {
        let addr: SocketAddr = e
            .parse()
            .map_err(|err| format!("--peers entry {i} ({e:?}): {err}"))?;
        if let Some(j) = addrs.iter().position(|&a| a == addr) {
            return Err(format!(
                "--peers: players {j} and {i} are both at {addr}; each duel process plays \
                 one player, so each needs its own address"
            ));
        }
        addrs.push(addr);
    }
    let own = addrs[local];
    let same = own == bound || (bound.ip().is_unspecified() && own.port() == bound.port());
    if !same {
        return Err(format!(
            "--peers entry {local} is {own}, but this process (--local {local}) is bound to \
             {bound}: entry {local} must be where the others reach this process, the address \
             (or, bound to 0.0.0.0, the port) --bind gives; a --bind with port 0 picks a free \
             port, so give a fixed one, or `--peers -` to read the list after `bound ADDR`"
        ));
    }
    Ok(addrs)
}

fn main() -> ExitCode {
    let args = match parse() {
        Ok(a) => a,
        Err(e) => {
            let _ = e.print();
            // `--help` on standard output, status 0; a usage error on standard error,
            // status 64 (EX_USAGE).
            return ExitCode::from(if e.use_stderr() { 64 } else { 0 });
        }
    };
    match run(&args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("duel: {e}");
            ExitCode::from(1)
        }
    }
}

fn run(args: &Args) -> Result<ExitCode, String> {
    if args.new_key {
        let key = SessionKey::random().map_err(|e| format!("no random source: {e}"))?;
        println!("{}", key.to_hex());
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(path) = &args.replay {
        return replay(path, args.workers);
    }
    if args.truth {
        let mut out = std::io::stdout().lock();
        for (f, sum) in game::truth_players(args.players, args.frames, args.delay as u64)
            .iter()
            .enumerate()
        {
            writeln!(out, "confirmed {} {sum:016x}", f + 1).map_err(|e| e.to_string())?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    let socket = UdpTransport::bind(&args.bind).map_err(|e| format!("bind {}: {e}", args.bind))?;
    let bound = socket.local_addr().map_err(|e| e.to_string())?;
    let probe = socket.probe();
    let socket = match &args.key {
        Some(key) => socket.with_key(key.clone()),
        None => socket,
    };
    // `-`: print the bound address, read the peer's (or every player's) from stdin.
    let read_line = || -> Result<String, String> {
        println!("bound {bound}");
        std::io::stdout().flush().map_err(|e| e.to_string())?;
        let mut line = String::new();
        std::io::stdin()
            .lock()
            .read_line(&mut line)
            .map_err(|e| e.to_string())?;
        Ok(line)
    };
    if !args.spectate.is_empty() {
        let host = if args.spectate == "-" {
            read_line()?
        } else {
            args.spectate.clone()
        };
        let host: SocketAddr = host
            .trim()
            .parse()
            .map_err(|e| format!("--spectate {host:?}: {e}"))?;
        return match args.net_sim {
            Some(config) => spectate(args, host, NetSim::new(socket, config), probe),
            None => spectate(args, host, socket, probe),
        };
    }
    // Every player's address in player order (this process's own at `--local`).
    let addrs: Vec<SocketAddr> = if !args.peers.is_empty() {
        let list = if args.peers == "-" {
            read_line()?
        } else {
            args.peers.clone()
        };
        peer_list(&list, args.players, args.local, bound)?
    } else {
        let peer: SocketAddr = if args.peer == "-" {
            let line = read_line()?;
            line.trim()
                .parse()
                .map_err(|e| format!("peer {line:?}: {e}"))?
        } else {
            args.peer
                .parse()
                .map_err(|e| format!("--peer {}: {e}", args.peer))?
        };
        let mut two = [peer; 2];
        two[args.local] = bound;
        two.to_vec()
    };
    let mut builder = NetSession::builder(args.players)
        .local_player(args.local)
        .input_delay(args.delay);
    for &addr in &args.spectators {
        builder = builder.spectator(addr);
    }
    for (h, &addr) in addrs.iter().enumerate() {
        if h != args.local {
            builder = builder.remote_player(h, addr);
        }
    }
    if args.record.is_some() {
        builder = builder.record_replay();
    }
    if args.inspect.is_some() {
        builder = builder.keep_confirmed_inputs();
    }
    // The simulated network wraps the transport (keyed or not) as the session's socket:
    // a second socket type, so each branch starts the session itself.
    let mut game = match args.desync_at {
        Some(at) => game::build_perturbed(args.workers, args.players, args.local, at),
        None => game::build_players(args.workers, args.players),
    };
    if args.desync_dir.is_some() {
        // Values as text in the desync report's provenance.
        game::show_types(game.world_mut());
    }
    let (started, sim) = match args.net_sim {
        Some(config) => {
            let socket = NetSim::new(socket, config);
            let sim = socket.probe();
            (builder.start::<Pad>(game, socket), Some(sim))
        }
        None => (builder.start::<Pad>(game, socket), None),
    };
    let mut session = started.map_err(|e| e.to_string())?;
    let mut follower = match &args.inspect {
        Some(addr) => Some(Follower::start(args.players, addr, args.headless)?),
        None => None,
    };
    let code = if args.headless {
        headless(args, &mut session, &mut follower)?
    } else {
        interactive(args, &mut session, &mut follower)?
    };
    if let Some(path) = &args.record {
        let mut file = std::fs::File::create(path).map_err(|e| format!("--record {path}: {e}"))?;
        session
            .finish_replay(&mut file)
            .map_err(|e| format!("--record {path}: {e}"))?;
    }
    let s = session.stats();
    let t = probe.stats();
    let msg = format!(
        "done frames={} confirmed={} rollbacks={} resimulated={} deepest={} waited={} \
         desyncs={} garbage={} unauthenticated={} replayed={} rejected={} strangers={} sent={} \
         received={} save_us={:.1} load_us={:.1} frame_us={:.1}",
        session.runtime().frame_count(),
        s.confirmed,
        s.rollback.rollbacks,
        s.rollback.resimulated,
        s.rollback.deepest,
        s.waited,
        s.desyncs,
        t.garbage,
        t.unauthenticated,
        t.replayed,
        s.rejected,
        s.strangers,
        t.sent,
        t.received,
        micros(s.rollback.save_time, s.rollback.saves),
        micros(s.rollback.load_time, s.rollback.rollbacks),
        micros(s.rollback.frame_time, s.rollback.frames),
    );
    let msg = match sim.map(|p| p.stats()) {
        Some(n) => format!(
            "{msg} sim_delivered={} sim_delayed={} sim_dropped={} sim_duplicated={} \
             sim_reordered={} sim_overflowed={}",
            n.delivered, n.delayed, n.dropped, n.duplicated, n.reordered, n.overflowed
        ),
        None => msg,
    };
    if args.headless {
        println!("{msg}");
    } else {
        eprintln!("{msg}");
    }
    Ok(code)
}

/// `--replay`: plays a recorded match offline, printing a `confirmed` line per frame (the
/// recorded checksum, which `play_replay` checked against this run's); status 3 with the
/// divergence on stderr if this build plays it differently.
fn replay(path: &str, workers: usize) -> Result<ExitCode, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("--replay {path}: {e}"))?;
    let replay = runsync::Replay::read(&mut bytes.as_slice())
        .map_err(|e| format!("--replay {path}: {e}"))?;
    let report = game::build(workers)
        .play_replay::<runsync_net::PlayerInputs<Pad>>(&replay)
        .map_err(|e| format!("--replay {path}: {e}"))?;
    let mut out = std::io::stdout().lock();
    for i in 0..report.frames as usize - usize::from(!report.is_identical()) {
        let sum = replay.checksum(i).unwrap_or_default();
        writeln!(out, "confirmed {} {sum:016x}", i + 1).map_err(|e| e.to_string())?;
    }
    match &report.divergence {
        None => Ok(ExitCode::SUCCESS),
        Some(d) => {
            eprintln!("duel: {path} plays differently here: {d}");
            Ok(ExitCode::from(3))
        }
    }
}

/// `--spectate`: watch the game through the host at `host` until `--frames` frames ran
/// (headless) or q is pressed, then print a `done` line with the spectator's counters.
fn spectate(
    args: &Args,
    host: SocketAddr,
    socket: impl ggrs::NonBlockingSocket<SocketAddr> + 'static,
    probe: TransportProbe,
) -> Result<ExitCode, String> {
    let game = game::build_players(args.workers, args.players);
    let mut builder = NetSpectator::builder(args.players, host);
    if args.inspect.is_some() {
        builder = builder.keep_confirmed_inputs();
    }
    let mut watch = builder
        .start::<Pad>(game, socket)
        .map_err(|e| e.to_string())?;
    let mut follower = match &args.inspect {
        Some(addr) => Some(Follower::start(args.players, addr, args.headless)?),
        None => None,
    };
    let code = if args.headless {
        watch_headless(args, &mut watch, &mut follower)?
    } else {
        watch_interactive(&mut watch, &mut follower)?
    };
    let s = watch.stats();
    let t = probe.stats();
    let msg = format!(
        "done frames={} confirmed={} waited={} catchups={} most_behind={} deferred={} \
         garbage={} unauthenticated={} replayed={} rejected={} strangers={} sent={} \
         received={} frame_us={:.1}",
        watch.runtime().frame_count(),
        s.confirmed,
        s.waited,
        s.catchups,
        s.most_behind,
        s.deferred,
        t.garbage,
        t.unauthenticated,
        t.replayed,
        s.rejected,
        s.strangers,
        t.sent,
        t.received,
        micros(s.frame_time, s.frames),
    );
    if args.headless {
        println!("{msg}");
    } else {
        eprintln!("{msg}");
    }
    Ok(code)
}

/// Headless watching: tick at the game's pace, printing each frame's checksum, until
/// `--frames` ran; status 2 if the host leaves or the timeout passes first.
fn watch_headless(
    args: &Args,
    watch: &mut NetSpectator<Pad>,
    follower: &mut Option<Follower>,
) -> Result<ExitCode, String> {
    let start = Instant::now();
    let mut out = std::io::stdout().lock();
    let mut next = Instant::now();
    loop {
        let tick = watch.tick().map_err(|e| e.to_string())?;
        for event in watch.events() {
            if let NetEvent::Disconnected { peer } = event {
                eprintln!("duel: the host {peer} left");
            }
        }
        for c in watch.confirmed_frames() {
            if let Some(f) = follower {
                f.follow(c, watch.confirmed_inputs(c.frame));
            }
            if c.frame <= args.frames {
                writeln!(out, "confirmed {} {:016x}", c.frame, c.checksum)
                    .map_err(|e| e.to_string())?;
            }
        }
        if watch.stats().confirmed >= args.frames {
            out.flush().map_err(|e| e.to_string())?;
            return Ok(ExitCode::SUCCESS);
        }
        if tick == SpectatorTick::Disconnected || start.elapsed() > args.timeout {
            eprintln!(
                "duel: stopped watching after {:?} at frame {}",
                start.elapsed(),
                watch.stats().confirmed
            );
            return Ok(ExitCode::from(2));
        }
        pace(&mut next, watch.recommended_interval(), HEADLESS_LAG);
    }
}

/// Watching in the terminal: the arena drawn each tick, q quits.
#[cfg(unix)]
fn watch_interactive(
    watch: &mut NetSpectator<Pad>,
    follower: &mut Option<Follower>,
) -> Result<ExitCode, String> {
    let _raw = RawTerminal::enter()?;
    let mut next = Instant::now();
    let mut note = String::from("connecting...");
    print!("\x1b[2J\x1b[?25l");
    loop {
        if keys().contains(&Key::Quit) {
            return Ok(ExitCode::SUCCESS);
        }
        match watch.tick().map_err(|e| e.to_string())? {
            SpectatorTick::Synchronizing => note = "synchronizing with the host...".to_owned(),
            SpectatorTick::Waiting => note = "waiting for the host...".to_owned(),
            SpectatorTick::Advanced { frames } if frames > 1 => note = "catching up".to_owned(),
            SpectatorTick::Advanced { .. } => note.clear(),
            SpectatorTick::Disconnected => note = "the host left".to_owned(),
        }
        watch.events().for_each(drop);
        for c in watch.confirmed_frames() {
            if let Some(f) = follower {
                f.follow(c, watch.confirmed_inputs(c.frame));
            }
        }
        let status = format!(
            "frame {}  behind {}  {note}\x1b[K\r\nwatching; q quits\x1b[K",
            watch.runtime().frame_count(),
            watch.frames_behind(),
        );
        draw_scene(watch.world(), None, &status);
        pace(&mut next, watch.recommended_interval(), Duration::ZERO);
    }
}

#[cfg(not(unix))]
fn watch_interactive(
    _: &mut NetSpectator<Pad>,
    _: &mut Option<Follower>,
) -> Result<ExitCode, String> {
    Err("the interactive mode needs a Unix terminal; use --headless".to_owned())
}

/// How far behind its schedule a headless loop may fall and still catch up with quick
/// ticks; past it (a stall) it starts its schedule again from now.
const HEADLESS_LAG: Duration = Duration::from_millis(100);

/// Waits for the next tick of a loop ticking every `interval`: sleeps until `next`, or,
/// when more than `max_lag` late (a stall), starts the schedule again from now rather
/// than running a burst of ticks to catch up.
fn pace(next: &mut Instant, interval: Duration, max_lag: Duration) {
    *next += interval;
    let now = Instant::now();
    if *next > now {
        std::thread::sleep(*next - now);
    } else if now - *next > max_lag {
        *next = now;
    }
}

fn micros(total: Duration, n: u64) -> f64 {
    total.as_secs_f64() * 1e6 / n.max(1) as f64
}

/// Scripted play: tick at the session's pace until `--frames` frames are confirmed (or
/// the timeout), printing each confirmed frame's checksum, then linger.
fn headless(
    args: &Args,
    session: &mut NetSession<Pad>,
    follower: &mut Option<Follower>,
) -> Result<ExitCode, String> {
    let start = Instant::now();
    let mut out = std::io::stdout().lock();
    let mut next = Instant::now();
    let mut done_at: Option<Instant> = None;
    // The first desync: its frame, the types the peer's checksum says differ, the peer,
    // and when it was seen (the report waits a moment for the peer's save).
    let mut desync: Option<(u64, Vec<&'static str>, SocketAddr, Instant)> = None;
    loop {
        let pad = game::scripted(args.local, session.input_frame());
        session.tick(pad).map_err(|e| e.to_string())?;
        for event in session.events() {
            match event {
                NetEvent::Desync {
                    frame, types, peer, ..
                } if desync.is_none() => {
                    if let Some(dir) = &args.desync_dir {
                        save_desync(args, session, dir, frame)?;
                    }
                    desync = Some((frame, types, peer, Instant::now()));
                }
                NetEvent::Disconnected { peer } => eprintln!("duel: {peer} disconnected"),
                _ => {}
            }
        }
        if let Some((frame, types, peer, seen)) = &desync {
            let theirs = args
                .desync_dir
                .as_deref()
                .and_then(|dir| other_save(args, dir, *frame));
            // Lingering keeps our packets going, so the peer sees the desync too.
            if seen.elapsed() >= args.linger && (theirs.is_some() || seen.elapsed() >= DESYNC_WAIT)
            {
                let report = desync_report(args, session, *frame, types, peer, theirs.as_deref());
                eprint!("{report}");
                if let Some(dir) = &args.desync_dir {
                    let path = dir.join(format!("duel-{}-report.txt", args.local));
                    std::fs::write(&path, &report)
                        .map_err(|e| format!("--desync-dir: {}: {e}", path.display()))?;
                }
                return Ok(ExitCode::from(3));
            }
        }
        for c in session.confirmed_frames() {
            if let Some(f) = follower {
                f.follow(c, session.confirmed_inputs(c.frame));
            }
            if c.frame <= args.frames {
                writeln!(out, "confirmed {} {:016x}", c.frame, c.checksum)
                    .map_err(|e| e.to_string())?;
            }
            if c.frame == args.frames {
                out.flush().map_err(|e| e.to_string())?;
                done_at = Some(Instant::now());
            }
        }
        if done_at.is_some_and(|t| t.elapsed() >= args.linger) {
            return Ok(ExitCode::SUCCESS);
        }
        if done_at.is_none() && start.elapsed() > args.timeout {
            eprintln!(
                "duel: timed out after {:?} at frame {} (confirmed {})",
                args.timeout,
                session.runtime().frame_count(),
                session.stats().confirmed
            );
            return Ok(ExitCode::from(2));
        }
        pace(&mut next, session.recommended_interval(), HEADLESS_LAG);
    }
}

/// `--inspect`: a runtime of the duel that runs every confirmed frame of the match with
/// its confirmed inputs, served by a read-only inspector (it never pauses or steers the
/// match; its frames are the ones every peer agrees on). One serves a player (fed from
/// `NetSession::confirmed_inputs`) or a spectator (`NetSpectator::confirmed_inputs`)
/// alike.
struct Follower {
    #[cfg(feature = "inspect")]
    rt: runsync::Runtime,
    #[cfg(feature = "inspect")]
    inspector: runsync_inspect::Inspector,
    /// Whether a frame's checksum differed from the match's (said once).
    #[cfg(feature = "inspect")]
    warned: bool,
    #[cfg(feature = "inspect")]
    headless: bool,
}

impl Follower {
    #[cfg(feature = "inspect")]
    fn start(players: usize, addr: &str, headless: bool) -> Result<Follower, String> {
        use runsync_inspect::{Color, Inspector};
        let mut rt = game::build_players(1, players);
        game::show_types(rt.world_mut());
        let inspector = Inspector::builder()
            .read_only()
            .ring(120)
            .input::<runsync_net::PlayerInputs<Pad>>()
            .picture(|world, picture| {
                picture.bounds([0.0, 0.0], [game::WIDTH as f32, game::HEIGHT as f32]);
                picture.y_down();
                let (ships, bullets) = game::scene(world);
                for (x, y) in bullets {
                    picture.dot(
                        [x as f32 + 0.5, y as f32 + 0.5],
                        3.0,
                        Color::rgb(90, 90, 90),
                    );
                }
                for (player, x, y, ..) in ships {
                    let (x, y) = (x as f32 + 0.5, y as f32 + 0.5);
                    let color = [(200, 60, 60), (52, 120, 200), (60, 160, 80), (200, 150, 40)]
                        [usize::from(player) % 4];
                    picture.circle([x, y], 0.6, Color::rgb(color.0, color.1, color.2));
                    picture.label(
                        [x, y - 1.0],
                        format!("{}", char::from(b'A' + player)),
                        Color::rgb(20, 20, 20),
                    );
                }
            })
            .bind(addr)
            .map_err(|e| format!("--inspect {addr}: {e}"))?;
        if headless {
            println!("inspector {}", inspector.url());
        } else {
            eprintln!("duel: inspector (read-only) at {}", inspector.url());
        }
        Ok(Follower {
            rt,
            inspector,
            warned: false,
            headless,
        })
    }

    #[cfg(not(feature = "inspect"))]
    fn start(_: usize, _: &str, _: bool) -> Result<Follower, String> {
        Err("--inspect: this duel was built without runsync-net's `inspect` feature".to_owned())
    }

    /// Runs confirmed frame `c` on the follower with `inputs`, the match's confirmed
    /// inputs of that frame (a player's or a spectator's `confirmed_inputs(c.frame)`).
    /// Without them (not kept) it runs nothing: the follower falls a frame behind, which
    /// the next frame's checksum shows.
    #[cfg(feature = "inspect")]
    fn follow(
        &mut self,
        c: runsync_net::ConfirmedFrame,
        inputs: Option<&runsync_net::PlayerInputs<Pad>>,
    ) {
        let Some(inputs) = inputs else {
            return;
        };
        let inputs = inputs.clone();
        let _ = self.inspector.poll_with(&mut self.rt, move || inputs);
        if self.rt.checksum() != c.checksum && !self.warned {
            // Headless, on stdout too, where a test reads it.
            if self.headless {
                println!("inspector differs at frame {}", c.frame);
            }
            eprintln!(
                "duel: the inspector's copy of the match differs at frame {} (its checksum \
                 {:016x}, the match's {:016x})",
                c.frame,
                self.rt.checksum(),
                c.checksum
            );
            self.warned = true;
        }
    }

    #[cfg(not(feature = "inspect"))]
    fn follow(
        &mut self,
        _: runsync_net::ConfirmedFrame,
        _: Option<&runsync_net::PlayerInputs<Pad>>,
    ) {
    }
}

/// How long a peer that saw a desync waits for the other peer's save before it reports
/// without it.
const DESYNC_WAIT: Duration = Duration::from_secs(5);

/// The file this peer's save of desync frame `frame` goes to in `dir`.
fn desync_save_path(dir: &std::path::Path, local: usize, frame: u64) -> std::path::PathBuf {
    dir.join(format!("duel-{local}-frame-{frame}.save"))
}

/// Writes this peer's state at desync frame `frame` (kept by the session) to
/// `--desync-dir`, as a runtime save any duel can load.
fn save_desync(
    args: &Args,
    session: &NetSession<Pad>,
    dir: &std::path::Path,
    frame: u64,
) -> Result<(), String> {
    let Some(snapshot) = session.desync_snapshot(frame) else {
        eprintln!("duel: the state of desync frame {frame} was not kept");
        return Ok(());
    };
    let mut scratch = game::build_players(1, args.players);
    scratch.try_restore(snapshot).map_err(|e| e.to_string())?;
    std::fs::create_dir_all(dir).map_err(|e| format!("--desync-dir {}: {e}", dir.display()))?;
    let path = desync_save_path(dir, args.local, frame);
    let mut file = std::fs::File::create(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    scratch
        .save(&mut file)
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// Another peer's save of desync frame `frame` in `dir`, if one is there.
fn other_save(args: &Args, dir: &std::path::Path, frame: u64) -> Option<std::path::PathBuf> {
    (0..args.players)
        .filter(|&k| k != args.local)
        .map(|k| desync_save_path(dir, k, frame))
        .find(|p| p.is_file())
}

/// The desync report: the frame, the types that differ, and where both saves are at
/// hand, the entities and values that differ, and which systems wrote those values in
/// that frame (the frame run again on this peer, the entities watched).
fn desync_report(
    args: &Args,
    session: &mut NetSession<Pad>,
    frame: u64,
    types: &[&'static str],
    peer: &SocketAddr,
    theirs: Option<&std::path::Path>,
) -> String {
    use std::fmt::Write as _;
    let mut r = format!("duel: desync at frame {frame} with {peer}\n");
    if types.is_empty() {
        r += "  types that differ: not told (the peer's checksum carries no parts)\n";
    } else {
        let _ = writeln!(r, "  types that differ: {}", types.join(", "));
    }
    let Some(dir) = &args.desync_dir else {
        r += "  entities: give every peer --desync-dir DIR to compare their saves\n";
        return r;
    };
    let ours = desync_save_path(dir, args.local, frame);
    let _ = writeln!(r, "  this peer's save: {}", ours.display());
    let Some(theirs) = theirs else {
        r += "  entities: the other peer's save did not appear; compare the saves when it does\n";
        return r;
    };
    let _ = writeln!(r, "  the peer's save: {}", theirs.display());
    let load = |path: &std::path::Path| -> Result<runsync::Runtime, String> {
        let mut rt = game::build_players(1, args.players);
        let mut file = std::fs::File::open(path).map_err(|e| e.to_string())?;
        rt.load(&mut file).map_err(|e| e.to_string())?;
        Ok(rt)
    };
    match (load(&ours), load(theirs)) {
        (Ok(a), Ok(b)) => {
            let differences = a.world().differences(b.world(), 8);
            let _ = writeln!(r, "  differences (this peer's value vs the peer's):");
            for d in &differences {
                let _ = writeln!(r, "    {d}");
            }
            let entities: Vec<_> = differences.iter().filter_map(|d| d.entity()).collect();
            match session.desync_provenance(frame, &entities) {
                Some(Ok(records)) => {
                    let first = records.iter().filter_map(|p| p.frame()).min();
                    let _ = writeln!(
                        r,
                        "  written on this peer in the frames up to {frame} (since the last \
                         frame both peers agreed on):"
                    );
                    for d in &differences {
                        let (Some(e), Some(name)) = (d.entity(), d.component()) else {
                            continue;
                        };
                        let short = name.rsplit("::").next().unwrap_or(name);
                        let _ = writeln!(r, "    {short} of {e}:");
                        let mut any = false;
                        for p in records.iter().filter(|p| p.entity() == e) {
                            let writes: Vec<String> = p
                                .components()
                                .iter()
                                .filter(|c| c.name == name)
                                .flat_map(|c| &c.writes)
                                .map(|w| {
                                    let value = w.value.as_deref().unwrap_or("?");
                                    format!("{} #{}: {value}", w.system_name, w.index)
                                })
                                .collect();
                            if let (Some(f), false) = (p.frame(), writes.is_empty()) {
                                let _ = writeln!(r, "      frame {f}: {}", writes.join(", "));
                                any = true;
                            }
                        }
                        if !any {
                            let _ = writeln!(
                                r,
                                "      not written (its value is older than frame {})",
                                first.unwrap_or(frame)
                            );
                        }
                    }
                }
                Some(Err(e)) => {
                    let _ = writeln!(r, "  the frames could not be run again: {e}");
                }
                None => {}
            }
        }
        (Err(e), _) | (_, Err(e)) => {
            let _ = writeln!(r, "  the saves could not be compared: {e}");
        }
    }
    r
}

/// Keyboard play in the terminal: raw mode through crossterm, the arena drawn each tick.
#[cfg(unix)]
fn interactive(
    args: &Args,
    session: &mut NetSession<Pad>,
    follower: &mut Option<Follower>,
) -> Result<ExitCode, String> {
    let _raw = RawTerminal::enter()?;
    let mut held = [0u32; 5]; // frames each of up, down, left, right, fire stays held
    let mut next = Instant::now();
    let mut note = String::from("connecting...");
    print!("\x1b[2J\x1b[?25l");
    loop {
        // Terminals send key repeats, not key states: a key counts as held for a few
        // frames after each press or repeat.
        for key in keys() {
            match key {
                Key::Quit => return Ok(ExitCode::SUCCESS),
                Key::Held(k) => held[k] = 30,
            }
        }
        let bits = [Pad::UP, Pad::DOWN, Pad::LEFT, Pad::RIGHT, Pad::FIRE];
        let mut pad = Pad(0);
        for (h, bit) in held.iter_mut().zip(bits) {
            if *h > 0 {
                pad.0 |= bit;
                *h -= 1;
            }
        }
        match session.tick(pad).map_err(|e| e.to_string())? {
            Tick::Synchronizing => note = "synchronizing with the peer...".to_owned(),
            Tick::Waiting { .. } => note = "waiting for the peer...".to_owned(),
            Tick::Advanced { .. } => note.clear(),
        }
        for event in session.events() {
            match event {
                NetEvent::Disconnected { peer } => note = format!("{peer} left"),
                NetEvent::Desync { frame, .. } => note = format!("desync at frame {frame}!"),
                _ => {}
            }
        }
        for c in session.confirmed_frames() {
            if let Some(f) = follower {
                f.follow(c, session.confirmed_inputs(c.frame));
            }
        }
        draw(args.local, session, &note);
        pace(&mut next, session.recommended_interval(), Duration::ZERO);
    }
}

#[cfg(not(unix))]
fn interactive(
    _: &Args,
    _: &mut NetSession<Pad>,
    _: &mut Option<Follower>,
) -> Result<ExitCode, String> {
    Err("the interactive mode needs a Unix terminal; use --headless".to_owned())
}

/// Draws the arena, the ships and bullets, and a status line.
#[cfg(unix)]
fn draw(me: usize, session: &NetSession<Pad>, note: &str) {
    let st = session.stats();
    let ping = session
        .network_stats(usize::from(me == 0))
        .map(|n| format!("{} ms", n.ping))
        .unwrap_or_else(|_| "-".to_owned());
    let status = format!(
        "frame {}  ping {ping}  rollbacks {}  re-run frames {}  {note}\x1b[K\r\n\
         WASD/arrows move, space fires, q quits\x1b[K",
        session.runtime().frame_count(),
        st.rollback.rollbacks,
        st.rollback.resimulated,
    );
    draw_scene(session.world(), Some(me), &status);
}

/// Draws `world`'s arena, its ships (`me`'s marked) and bullets, then `status`.
#[cfg(unix)]
fn draw_scene(world: &runsync::World, me: Option<usize>, status: &str) {
    let (ships, bullets) = game::scene(world);
    let (w, h) = (game::WIDTH as usize, game::HEIGHT as usize);
    let mut grid = vec![vec![b' '; w]; h];
    for (x, y) in bullets {
        grid[y as usize][x as usize] = b'*';
    }
    for &(player, x, y, ..) in &ships {
        grid[y as usize][x as usize] = b'A' + player;
    }
    let mut s = String::from("\x1b[H");
    s += &format!("+{}+\r\n", "-".repeat(w));
    for row in grid {
        s += "|";
        s += &String::from_utf8_lossy(&row);
        s += "|\r\n";
    }
    s += &format!("+{}+\r\n", "-".repeat(w));
    for &(player, _, _, hp, score) in &ships {
        let you = if Some(usize::from(player)) == me {
            " (you)"
        } else {
            ""
        };
        let name = char::from(b'A' + player);
        s += &format!("{name}{you}: hp {hp}  score {score}    ");
    }
    s += "\x1b[K\r\n";
    s += status;
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(s.as_bytes());
    let _ = out.flush();
}

/// The terminal in raw mode (no line buffering, no echo, no signal keys: Ctrl-C is read
/// as a key) while this lives; the saved settings come back when it drops, panics
/// included.
#[cfg(unix)]
struct RawTerminal;

#[cfg(unix)]
impl RawTerminal {
    fn enter() -> Result<Self, String> {
        crossterm::terminal::enable_raw_mode().map_err(|e| {
            format!("the terminal's raw mode: {e} (is there a terminal? use --headless otherwise)")
        })?;
        Ok(RawTerminal)
    }
}

#[cfg(unix)]
impl Drop for RawTerminal {
    fn drop(&mut self) {
        let _ = crossterm::terminal::disable_raw_mode();
        print!("\x1b[?25h\r\n");
        let _ = std::io::stdout().flush();
    }
}

/// A key the interactive modes act on.
#[cfg(unix)]
#[derive(Clone, Copy, Debug, PartialEq)]
enum Key {
    /// Holds one of up, down, left, right, fire (0 to 4) for a few frames.
    Held(usize),
    /// q or Ctrl-C.
    Quit,
}

/// The keys pressed (or repeated by the terminal) since the last call, in order, without
/// waiting for one. Other keys and events are dropped.
#[cfg(unix)]
fn keys() -> Vec<Key> {
    use crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
    let mut keys = Vec::new();
    while event::poll(Duration::ZERO).unwrap_or(false) {
        let key = match event::read() {
            Ok(Event::Key(key)) if key.kind != KeyEventKind::Release => key,
            Ok(_) => continue,
            Err(_) => break,
        };
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        keys.extend(match key.code {
            KeyCode::Char('c' | 'C') if ctrl => Some(Key::Quit),
            _ if ctrl => None,
            KeyCode::Char('q' | 'Q') => Some(Key::Quit),
            KeyCode::Up | KeyCode::Char('w' | 'W') => Some(Key::Held(0)),
            KeyCode::Down | KeyCode::Char('s' | 'S') => Some(Key::Held(1)),
            KeyCode::Left | KeyCode::Char('a' | 'A') => Some(Key::Held(2)),
            KeyCode::Right | KeyCode::Char('d' | 'D') => Some(Key::Held(3)),
            KeyCode::Char(' ') => Some(Key::Held(4)),
            _ => None,
        });
    }
    keys
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Result<Args, clap::Error> {
        parse_from(std::iter::once("duel").chain(line.split_whitespace()))
    }

    fn refused(line: &str) -> String {
        match args(line) {
            Ok(_) => panic!("`{line}` was accepted"),
            Err(e) => {
                assert!(e.use_stderr(), "`{line}`: {e}");
                e.to_string()
            }
        }
    }

    #[test]
    fn the_command_line_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn defaults_and_later_options_override_earlier_ones() {
        let a = args("--truth").unwrap();
        assert_eq!((a.players, a.frames, a.delay, a.workers), (2, 600, 2, 2));
        assert_eq!(
            (a.timeout, a.linger),
            (Duration::from_secs(60), Duration::from_secs(1))
        );
        assert_eq!(a.local, usize::MAX);
        assert!(a.bind.is_empty() && a.peer.is_empty() && a.spectate.is_empty());
        // As the multi-process tests use it: their defaults first, then the test's own.
        let a = args(
            "--headless --bind 127.0.0.1:0 --timeout 45 --workers 1 --local 1 \
             --bind 127.0.0.1:7001 --peer 127.0.0.1:7000 --workers 3 --headless",
        )
        .unwrap();
        assert_eq!(a.bind, "127.0.0.1:7001");
        assert_eq!((a.local, a.workers, a.timeout.as_secs()), (1, 3, 45));
        assert!(a.headless && !a.truth);
    }

    #[test]
    fn spectators_are_a_list_that_adds_up() {
        let a = parse_from([
            "duel",
            "--local",
            "0",
            "--bind",
            "127.0.0.1:7000",
            "--peer",
            "127.0.0.1:7001",
            "--spectators",
            "127.0.0.1:7002, 127.0.0.1:7003",
            "--spectators",
            "127.0.0.1:7004",
        ])
        .unwrap();
        let ports: Vec<u16> = a.spectators.iter().map(SocketAddr::port).collect();
        assert_eq!(ports, [7002, 7003, 7004]);
        assert!(refused("--truth --spectators 127.0.0.1:1,x").contains("'x'"));
    }

    #[test]
    fn keys_are_hex_or_a_passphrase() {
        let hex = "ab".repeat(32);
        let a = args(&format!("--truth --key {hex}")).unwrap();
        assert_eq!(a.key.unwrap().to_hex(), hex);
        let a = args("--truth --key -a-passphrase").unwrap();
        assert!(a.key.unwrap() == SessionKey::derive("-a-passphrase"));
        assert!(refused(&format!("--truth --key {}", "z".repeat(64))).contains("--key"));
    }

    /// Each bad value is refused with the option, the value and why.
    #[test]
    fn bad_values_are_refused_with_what_is_wrong() {
        for (line, says) in [
            ("--frames abc --truth", "invalid digit"),
            ("--frames --truth", "--frames"),
            ("--players 5 --truth", "a duel has 2 to 4 players"),
            ("--players 1 --truth", "a duel has 2 to 4 players"),
            ("--timeout 1.5 --truth", "--timeout"),
            (
                "--net-sim loss=200 --truth",
                "a percentage must be from 0 to 100",
            ),
            ("--nonsense", "--nonsense"),
            ("--spectate 127.0.0.1:1", "--spectate needs --bind"),
            (
                "--spectate - --bind 127.0.0.1:0 --local 0",
                "a spectator (--spectate) plays no player and hosts no one",
            ),
            (
                "--local 2 --bind b --peer p",
                "--local 2: a game of 2 players has players 0 to 1",
            ),
            ("--local 0 --bind b", "are required"),
            ("--local 0 --bind b --peer p --peers q", "not both"),
            (
                "--players 3 --local 0 --bind b --peer p",
                "--peer is the two-player form",
            ),
        ] {
            let shown = refused(line);
            assert!(shown.contains(says), "`{line}`: {shown}");
        }
    }

    #[test]
    fn help_is_not_an_error() {
        for line in ["--help", "-h"] {
            let e = args(line).err().unwrap();
            assert!(!e.use_stderr(), "{line}");
            let help = e.to_string();
            assert!(help.contains("--net-sim <SPEC>") && help.contains("[default: 600]"));
        }
    }
}
