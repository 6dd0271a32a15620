//! The HTTP endpoint Prometheus scrapes: `GET /metrics` answers with the exposition the
//! process renders at that moment. Each connection is served on a thread of its own, at
//! most [`CONNECTIONS_MAX`] at once, and each is bounded in size and in total time, so a
//! stuck or hostile client holds one slot for at most [`CONNECTION_DEADLINE_MS`] while
//! other scrapers are answered, and never grows memory.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::exposition::Exposition;
use crate::process::render_process;

/// Writes the process's own metrics; `process_*` ones are added by the server.
pub type Render = Arc<dyn Fn(&mut Exposition) + Send + Sync>;

/// The longest request head read; a scrape's is a few hundred bytes.
const REQUEST_HEAD_BYTES_MAX: usize = 8 * 1024;
/// How long one connection may take, in all, to send its request and read the answer: a
/// client sending a byte at a time is cut off, not served for hours.
const CONNECTION_DEADLINE_MS: u64 = 5_000;
/// Connections served at once; one more is closed at once (a scraper retries at its
/// next interval).
const CONNECTIONS_MAX: usize = 8;
/// Bytes of the answer written per system call, each within the deadline left.
const WRITE_CHUNK_BYTES: usize = 16 * 1024;

pub struct MetricsServer {
    address: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl MetricsServer {
    /// Listens on `bind` (port 0: any free port) and serves until dropped.
    pub fn start(bind: SocketAddr, render: Render) -> io::Result<Self> {
        let listener = TcpListener::bind(bind)?;
        let address = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        let thread = std::thread::Builder::new()
            .name("kista-metrics".into())
            .spawn(move || {
                let serving = Arc::new(AtomicUsize::new(0));
                for stream in listener.incoming() {
                    if stopping.load(Ordering::SeqCst) {
                        break;
                    }
                    if let Ok(stream) = stream {
                        serve_apart(stream, &render, &serving);
                    }
                }
            })?;
        Ok(Self {
            address,
            stop,
            thread: Some(thread),
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.address
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the accepting thread so it sees the stop.
        let _ = TcpStream::connect_timeout(&self.address, Duration::from_secs(1));
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Serves `stream` on a thread of its own, unless [`CONNECTIONS_MAX`] are being served
/// (then it is closed at once). A client that goes away or misbehaves costs its own
/// answer only.
fn serve_apart(stream: TcpStream, render: &Render, serving: &Arc<AtomicUsize>) {
    let taken = serving.fetch_update(Ordering::AcqRel, Ordering::Acquire, |now| {
        (now < CONNECTIONS_MAX).then_some(now + 1)
    });
    if taken.is_err() {
        return;
    }
    let (render, slot) = (render.clone(), serving.clone());
    let spawned = std::thread::Builder::new()
        .name("kista-metrics-client".into())
        .spawn(move || {
            let deadline = Instant::now() + Duration::from_millis(CONNECTION_DEADLINE_MS);
            let _ = serve(stream, &render, deadline);
            slot.fetch_sub(1, Ordering::AcqRel);
        });
    if spawned.is_err() {
        serving.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The time left before `deadline`, as a socket timeout (an error once it has passed).
fn left(deadline: Instant) -> io::Result<Option<Duration>> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(io::Error::new(io::ErrorKind::TimedOut, "past the deadline"));
    }
    Ok(Some(left))
}

fn serve(mut stream: TcpStream, render: &Render, deadline: Instant) -> io::Result<()> {
    let head = read_head(&mut stream, deadline)?;
    let request_line = head.lines().next().unwrap_or("");
    let mut words = request_line.split(' ');
    let (method, path) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let path = path.split('?').next().unwrap_or("");
    let (status, body) = match (method, path) {
        ("GET" | "HEAD", "/metrics") => {
            let mut out = Exposition::default();
            render(&mut out);
            render_process(&mut out);
            ("200 OK", out.into_text())
        }
        ("GET" | "HEAD", "/") => ("200 OK", "Kista metrics are at /metrics\n".to_string()),
        ("GET" | "HEAD", _) => ("404 Not Found", "no such page; try /metrics\n".to_string()),
        _ => ("405 Method Not Allowed", "only GET is served\n".to_string()),
    };
    let header = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let mut answer = header.into_bytes();
    if method != "HEAD" {
        answer.extend_from_slice(body.as_bytes());
    }
    for chunk in answer.chunks(WRITE_CHUNK_BYTES) {
        stream.set_write_timeout(left(deadline)?)?;
        stream.write_all(chunk)?;
    }
    stream.flush()
}

/// Reads up to the blank line that ends a request's head (a scrape has no body), by
/// `deadline`.
fn read_head(stream: &mut TcpStream, deadline: Instant) -> io::Result<String> {
    let mut head = Vec::with_capacity(512);
    let mut buffer = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        if head.len() >= REQUEST_HEAD_BYTES_MAX {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "request too long",
            ));
        }
        stream.set_read_timeout(left(deadline)?)?;
        let read = stream.read(&mut buffer)?;
        if read == 0 {
            break;
        }
        head.extend_from_slice(&buffer[..read]);
    }
    Ok(String::from_utf8_lossy(&head).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exposition::Kind;

    fn get(address: SocketAddr, request: &str) -> String {
        let mut stream = TcpStream::connect(address).unwrap();
        stream.write_all(request.as_bytes()).unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        answer
    }

    #[test]
    fn a_scrape_gets_the_rendered_metrics_and_the_process_ones() {
        let render: Render = Arc::new(|out: &mut Exposition| {
            out.single("kista_answer", "The answer.", Kind::Gauge, 42.0);
        });
        let server = MetricsServer::start("127.0.0.1:0".parse().unwrap(), render).unwrap();
        let answer = get(
            server.local_addr(),
            "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n",
        );
        assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "{answer}");
        assert!(answer.contains("\r\n\r\n# HELP kista_answer The answer.\n"));
        assert!(answer.contains("\nkista_answer 42\n"));
        assert!(answer.contains("\nprocess_resident_memory_bytes "));
        let missing = get(server.local_addr(), "GET /nothing HTTP/1.1\r\n\r\n");
        assert!(missing.starts_with("HTTP/1.1 404 "), "{missing}");
        let posted = get(server.local_addr(), "POST /metrics HTTP/1.1\r\n\r\n");
        assert!(posted.starts_with("HTTP/1.1 405 "), "{posted}");
    }

    #[test]
    fn an_endless_request_is_cut_off_and_the_server_serves_on() {
        let render: Render = Arc::new(|_: &mut Exposition| {});
        let server = MetricsServer::start("127.0.0.1:0".parse().unwrap(), render).unwrap();
        let mut flood = TcpStream::connect(server.local_addr()).unwrap();
        let junk = vec![b'x'; REQUEST_HEAD_BYTES_MAX + 2048];
        let _ = flood.write_all(&junk);
        drop(flood);
        let answer = get(server.local_addr(), "GET /metrics HTTP/1.0\r\n\r\n");
        assert!(answer.starts_with("HTTP/1.1 200 OK"), "{answer}");
    }

    #[test]
    fn a_slow_client_does_not_hold_up_other_scrapes_and_is_cut_off_at_its_deadline() {
        let render: Render = Arc::new(|_: &mut Exposition| {});
        let server = MetricsServer::start("127.0.0.1:0".parse().unwrap(), render).unwrap();
        // Connected first, it sends its request a byte at a time and never ends it.
        let mut slow = TcpStream::connect(server.local_addr()).unwrap();
        let hung_up = Arc::new(AtomicBool::new(false));
        let seen = hung_up.clone();
        let trickle = std::thread::spawn(move || {
            slow.set_read_timeout(Some(Duration::from_millis(200)))
                .unwrap();
            // (checked for 30 s at most)
            for _ in 0..150 {
                let _ = slow.write_all(b"G");
                let mut byte = [0u8; 1];
                let closed = match slow.read(&mut byte) {
                    Ok(read) => {
                        assert_eq!(read, 0, "no answer to a request never finished");
                        true
                    }
                    Err(error) => !matches!(
                        error.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ),
                };
                if closed {
                    seen.store(true, Ordering::SeqCst);
                    return;
                }
            }
        });
        let answer = get(server.local_addr(), "GET /metrics HTTP/1.0\r\n\r\n");
        assert!(answer.starts_with("HTTP/1.1 200 OK"), "{answer}");
        assert!(
            !hung_up.load(Ordering::SeqCst),
            "another scraper was answered while the slow one was still being read"
        );
        trickle.join().unwrap();
        assert!(hung_up.load(Ordering::SeqCst), "closed at its deadline");
    }
}
