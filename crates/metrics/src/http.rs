//! The HTTP endpoint Prometheus scrapes: `GET /metrics` answers with the exposition the
//! process renders at that moment. One thread serves one connection at a time, each bounded
//! in size and time, so a stuck or hostile client delays a scrape and never grows memory.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crate::exposition::Exposition;
use crate::process::render_process;

/// Writes the process's own metrics; `process_*` ones are added by the server.
pub type Render = Arc<dyn Fn(&mut Exposition) + Send + Sync>;

/// The longest request head read; a scrape's is a few hundred bytes.
const REQUEST_HEAD_BYTES_MAX: usize = 8 * 1024;
/// How long one connection may take to send its request or read the answer.
const CONNECTION_TIMEOUT_MS: u64 = 5_000;

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
                for stream in listener.incoming() {
                    if stopping.load(Ordering::SeqCst) {
                        break;
                    }
                    // A client that goes away or misbehaves costs its own answer only.
                    let _ = stream.and_then(|stream| serve(stream, &render));
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

fn serve(mut stream: TcpStream, render: &Render) -> io::Result<()> {
    let timeout = Some(Duration::from_millis(CONNECTION_TIMEOUT_MS));
    stream.set_read_timeout(timeout)?;
    stream.set_write_timeout(timeout)?;
    let head = read_head(&mut stream)?;
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
    stream.write_all(header.as_bytes())?;
    if method != "HEAD" {
        stream.write_all(body.as_bytes())?;
    }
    stream.flush()
}

/// Reads up to the blank line that ends a request's head (a scrape has no body).
fn read_head(stream: &mut TcpStream) -> io::Result<String> {
    let mut head = Vec::with_capacity(512);
    let mut buffer = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        if head.len() >= REQUEST_HEAD_BYTES_MAX {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "request too long",
            ));
        }
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
}
