//! The load generator's HTTP/1.1 transport for `http://` targets: each in-flight request drives
//! its own hyper connection inside its own task (no connection task to be scheduled behind the
//! others), the request is stamped at the write that puts it on the socket, and each response
//! chunk at the kernel's receive time of the read that brought it (`SO_TIMESTAMPNS`), so time a
//! busy client spends before it gets to a ready socket never enters TTFT or ITL.

use std::future::{poll_fn, Future};
use std::io;
use std::pin::{pin, Pin};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{ready, Context, Poll};

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::client::conn::http1;
use hyper::header::{HeaderMap, HeaderValue, HOST};
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::{Duration, Instant};

/// Where one target's connections go.
pub struct Wire {
    host: String,
    port: u16,
    /// The request target: path and query.
    path: String,
    host_header: HeaderValue,
    idle: Mutex<Vec<Conn>>,
}

/// What the wire delivered for one request.
pub struct Delivery {
    /// When the request's first byte was written to the socket.
    pub sent: Instant,
    pub status: hyper::StatusCode,
    /// The response's `Content-Type`, when it sent one.
    pub content_type: Option<String>,
    /// The response's `Content-Encoding`, when it sent one (speclens asks for none).
    pub content_encoding: Option<String>,
    /// The body and when each part of it arrived.
    pub body: Arrivals,
    /// Why the body ended early, if it did.
    pub cut: Option<WireError>,
    /// How the exchange went on the connection.
    pub trace: WireTrace,
}

/// The connection phases of one exchange (AIPerf's HTTP timings).
#[derive(Debug, Clone, Copy)]
pub struct WireTrace {
    /// When the exchange was asked for: before a connection was taken or opened.
    pub called: Instant,
    /// Resolving the host's name (zero for an address or a reused connection).
    pub dns: Duration,
    /// Opening the connection, the name's resolution included (zero when reused).
    pub connecting: Duration,
    pub reused: bool,
    /// When the request's last byte was handed to the socket.
    pub written: Instant,
    /// The request body's bytes.
    pub bytes_sent: u64,
}

/// One budget for the response bytes buffered by every request in flight, so many large
/// answers at once cannot exhaust memory even when each is under its own cap.
#[derive(Debug)]
pub struct Budget {
    limit: usize,
    used: std::sync::atomic::AtomicUsize,
}

impl Budget {
    pub fn new(limit: usize) -> Budget {
        Budget {
            limit,
            used: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    /// The budget's size in bytes.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// An empty charge against this budget, for one response.
    pub fn charge(self: &std::sync::Arc<Budget>) -> Charge {
        Charge {
            budget: self.clone(),
            held: 0,
        }
    }
}

/// The bytes one response holds of the [`Budget`]; given back when it is dropped.
#[derive(Debug)]
pub struct Charge {
    budget: std::sync::Arc<Budget>,
    held: usize,
}

impl Charge {
    /// Take `bytes` more; false (nothing taken) when the budget would pass its limit.
    pub fn take(&mut self, bytes: usize) -> bool {
        use std::sync::atomic::Ordering;
        let before = self.budget.used.fetch_add(bytes, Ordering::AcqRel);
        if before.saturating_add(bytes) > self.budget.limit {
            self.budget.used.fetch_sub(bytes, Ordering::AcqRel);
            return false;
        }
        self.held += bytes;
        true
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        self.budget
            .used
            .fetch_sub(self.held, std::sync::atomic::Ordering::AcqRel);
    }
}

/// A response body as it arrived: its bytes in one buffer and, for each arrival (what one read
/// brought, however many HTTP chunks it held), when it came and where its bytes end. One buffer
/// and two lists, not an allocation a chunk: a stream of a few hundred small events costs a
/// handful of allocations. What it allocates is charged to the shared [`Budget`] before it is
/// allocated, so a server sending 1-byte chunks at distinct times meets the budget at what its
/// arrivals really cost (24 bytes each beside the payload).
#[derive(Debug)]
pub struct Arrivals {
    bytes: Vec<u8>,
    stamps: Vec<Instant>,
    ends: Vec<usize>,
    charge: Charge,
}

/// What one arrival's slot costs: its stamp and its end offset.
const SLOT_BYTES: usize = std::mem::size_of::<Instant>() + std::mem::size_of::<usize>();

/// The capacity a list grows to when it must hold `needed`: doubling, as `Vec` does.
fn grown(capacity: usize, needed: usize) -> usize {
    if needed <= capacity {
        capacity
    } else {
        needed.max(capacity * 2).max(64)
    }
}

impl Arrivals {
    pub fn new(charge: Charge) -> Arrivals {
        Arrivals {
            bytes: Vec::new(),
            stamps: Vec::new(),
            ends: Vec::new(),
            charge,
        }
    }

    /// Add `data`, arrived at `at` (joined to the last arrival when it has the same stamp);
    /// false, with nothing added, when what it needs would pass the budget.
    pub fn push(&mut self, at: Instant, data: &[u8]) -> bool {
        if data.is_empty() {
            return true;
        }
        let joined = self.stamps.last() == Some(&at);
        let bytes_to = grown(self.bytes.capacity(), self.bytes.len() + data.len());
        let slots_to = if joined {
            self.stamps.capacity()
        } else {
            grown(self.stamps.capacity(), self.stamps.len() + 1)
        };
        let cost = (bytes_to - self.bytes.capacity()) + (slots_to - self.stamps.capacity()) * SLOT_BYTES;
        if cost > 0 && !self.charge.take(cost) {
            return false;
        }
        self.bytes.reserve_exact(bytes_to - self.bytes.len());
        self.bytes.extend_from_slice(data);
        if joined {
            if let Some(end) = self.ends.last_mut() {
                *end = self.bytes.len();
            }
        } else {
            self.stamps.reserve_exact(slots_to - self.stamps.len());
            self.ends.reserve_exact(slots_to - self.ends.len());
            self.stamps.push(at);
            self.ends.push(self.bytes.len());
        }
        true
    }

    /// The body's bytes, all arrivals together.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Where each arrival's bytes end in [`Arrivals::bytes`].
    pub fn ends(&self) -> &[usize] {
        &self.ends
    }

    /// When each arrival came.
    pub fn stamps(&self) -> &[Instant] {
        &self.stamps
    }

    /// When the last bytes arrived.
    pub fn last(&self) -> Option<Instant> {
        self.stamps.last().copied()
    }
}

/// Whether the environment names an HTTP proxy (then reqwest, which honours it, sends instead).
pub fn proxy_in_environment() -> bool {
    ["HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"]
        .iter()
        .any(|v| std::env::var_os(v).is_some_and(|p| !p.is_empty()))
}

/// A failure of the wire, by where it happened.
#[derive(Debug)]
pub enum WireError {
    /// No connection could be made.
    Connect(String),
    /// The connection failed before a response head arrived.
    Request(String),
    /// What came back is not an HTTP/1 response.
    NotHttp(String),
    /// The body broke off.
    Body(String),
    /// The body passed the size cap.
    TooLarge,
    /// The responses in flight together passed their shared budget.
    OverBudget,
}

/// Arrival stamps shared between a connection's socket and the request reading it.
#[derive(Default)]
struct Stamps {
    /// Kernel receive time of the latest read (the read time where the kernel gives none).
    last_read: Option<Instant>,
    /// The first write since the last `arm`.
    first_write: Option<Instant>,
    /// When the latest write returned (the request's last byte handed to the socket).
    last_write: Option<Instant>,
}

type Shared = Arc<Mutex<Stamps>>;

fn lock(s: &Shared) -> std::sync::MutexGuard<'_, Stamps> {
    s.lock().unwrap_or_else(PoisonError::into_inner)
}

type Driver = Pin<Box<dyn Future<Output = hyper::Result<()>> + Send>>;

/// One HTTP/1.1 connection: the request half and the future that runs the socket.
struct Conn {
    sender: http1::SendRequest<Full<Bytes>>,
    /// Runs the socket; `None` once it finished (the connection is closed). Dropped then, so a
    /// request it never took fails at once instead of waiting for the caller's timeout.
    driver: Option<Driver>,
    stamps: Shared,
    /// The socket, to look for the peer's close before reuse (valid while `driver` is).
    socket: kernel::Socket,
}

impl Conn {
    /// Let the connection make progress; drop its driver when it has finished.
    fn poll_driver(&mut self, cx: &mut Context<'_>) {
        if let Some(driver) = self.driver.as_mut() {
            if driver.as_mut().poll(cx).is_ready() {
                self.driver = None;
            }
        }
    }

    /// Run `op` while the connection makes progress in the same task.
    async fn drive<F: Future>(&mut self, op: F) -> F::Output {
        let mut op = pin!(op);
        poll_fn(|cx| {
            self.poll_driver(cx);
            op.as_mut().poll(cx)
        })
        .await
    }

    /// Whether an idle connection can take another request (without waiting). The socket
    /// itself is asked whether the server closed it: a server may close right after a response
    /// (llama-server does after a streamed one, whatever its Keep-Alive header says), and the
    /// runtime may not have seen that yet.
    async fn usable(&mut self) -> bool {
        poll_fn(|cx| {
            self.poll_driver(cx);
            Poll::Ready(
                self.driver.is_some()
                    && !self.sender.is_closed()
                    && self.sender.is_ready()
                    && !kernel::peer_closed(self.socket),
            )
        })
        .await
    }
}

impl Wire {
    /// A transport for `url` (`http://` only), or `None` when it needs another one (TLS,
    /// credentials in the URL).
    pub fn for_url(url: &str) -> Option<Wire> {
        let parsed = url::Url::parse(url).ok()?;
        if parsed.scheme() != "http" || !parsed.username().is_empty() || parsed.password().is_some() {
            return None;
        }
        let host = match parsed.host()? {
            url::Host::Domain(d) => d.to_string(),
            url::Host::Ipv4(a) => a.to_string(),
            url::Host::Ipv6(a) => a.to_string(),
        };
        let port = parsed.port_or_known_default()?;
        let authority = match parsed.port() {
            Some(p) => format!("{}:{p}", parsed.host_str()?),
            None => parsed.host_str()?.to_string(),
        };
        let path = match parsed.query() {
            Some(q) => format!("{}?{q}", parsed.path()),
            None => parsed.path().to_string(),
        };
        Some(Wire {
            host,
            port,
            path,
            host_header: HeaderValue::from_str(&authority).ok()?,
            idle: Mutex::new(Vec::new()),
        })
    }

    /// The host's addresses (no lookup for an address) and how long resolving took.
    async fn resolve(&self) -> Result<(Vec<std::net::SocketAddr>, Duration), WireError> {
        if let Ok(ip) = self.host.parse::<std::net::IpAddr>() {
            return Ok((vec![(ip, self.port).into()], Duration::ZERO));
        }
        let asked = Instant::now();
        let addrs = tokio::net::lookup_host((self.host.as_str(), self.port))
            .await
            .map_err(|e| WireError::Connect(format!("cannot resolve {}: {e}", self.host)))?
            .collect();
        Ok((addrs, asked.elapsed()))
    }

    /// A new connection, and how long resolving the name took.
    async fn connect(&self) -> Result<(Conn, Duration), WireError> {
        let (addrs, dns) = self.resolve().await?;
        let tcp = TcpStream::connect(addrs.as_slice())
            .await
            .map_err(|e| WireError::Connect(format!("cannot connect to {}:{}: {e}", self.host, self.port)))?;
        tcp.set_nodelay(true)
            .map_err(|e| WireError::Connect(format!("cannot set TCP_NODELAY: {e}")))?;
        let stamps = Shared::default();
        let socket = kernel::socket_of(&tcp);
        let io = TokioIo::new(TimedStream::new(tcp, stamps.clone()));
        let (sender, conn) = http1::handshake(io)
            .await
            .map_err(|e| WireError::Connect(format!("HTTP handshake failed: {e}")))?;
        let conn = Conn {
            sender,
            driver: Some(Box::pin(conn)),
            stamps,
            socket,
        };
        Ok((conn, dns))
    }

    /// A new connection, with its phases in `trace`.
    async fn connect_traced(&self, trace: &mut WireTrace) -> Result<Conn, WireError> {
        let asked = Instant::now();
        let (conn, dns) = self.connect().await?;
        (trace.dns, trace.connecting, trace.reused) = (dns, asked.elapsed(), false);
        Ok(conn)
    }

    /// An idle connection that is still open, else a new one.
    async fn checkout(&self, trace: &mut WireTrace) -> Result<Conn, WireError> {
        loop {
            let idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner).pop();
            match idle {
                Some(mut c) => {
                    if c.usable().await {
                        trace.reused = true;
                        return Ok(c);
                    }
                }
                None => return self.connect_traced(trace).await,
            }
        }
    }

    fn checkin(&self, conn: Conn) {
        self.idle.lock().unwrap_or_else(PoisonError::into_inner).push(conn);
    }

    /// POST `body` and read the whole response, stamping as it arrives; the caller bounds the
    /// time. A reused connection is replaced once, and the request sent again on a new one, when
    /// the server closed it before taking the request: nothing was written, or the server closed
    /// without a byte of answer right after the write ([`closed_unread`]; the keep-alive race
    /// RFC 9112 §9.3.1 describes: llama-server
    /// closes each connection just after a streamed response, so the next request on it can be
    /// written before the close arrives, and is never read). Any other failure is the request's.
    pub async fn post(
        &self,
        headers: &HeaderMap,
        body: Bytes,
        max_response_bytes: usize,
        charge: Charge,
    ) -> Result<Delivery, WireError> {
        let called = Instant::now();
        let mut trace = WireTrace {
            called,
            dns: Duration::ZERO,
            connecting: Duration::ZERO,
            reused: false,
            written: called,
            bytes_sent: body.len() as u64,
        };
        let mut conn = self.checkout(&mut trace).await?;
        let (sent, response) = loop {
            let mut request = Request::post(self.path.as_str())
                .body(Full::new(body.clone()))
                .map_err(|e| WireError::Request(format!("cannot build the request: {e}")))?;
            *request.headers_mut() = headers.clone();
            request.headers_mut().insert(HOST, self.host_header.clone());
            {
                let mut stamps = lock(&conn.stamps);
                stamps.first_write = None;
                stamps.last_write = None;
                stamps.last_read = None;
            }
            let queued_at = Instant::now();
            let sent = conn.sender.send_request(request);
            let outcome = conn.drive(sent).await;
            let (written, answered) = {
                let stamps = lock(&conn.stamps);
                (stamps.first_write, stamps.last_read.is_some())
            };
            match outcome {
                Ok(r) => break (written.unwrap_or(queued_at), r),
                Err(e) if trace.reused && (written.is_none() || closed_unread(&e, answered, written)) => {
                    conn = self.connect_traced(&mut trace).await?;
                }
                // hyper's parse errors include a bad status line and an oversized head.
                Err(e) if e.is_parse() => return Err(WireError::NotHttp(describe(&e))),
                Err(e) => return Err(WireError::Request(describe(&e))),
            }
        };
        let (parts, mut incoming): (_, Incoming) = Response::into_parts(response);
        let mut body = Arrivals::new(charge);
        let cut = loop {
            match conn.drive(incoming.frame()).await {
                None => break None,
                Some(Err(e)) => break Some(WireError::Body(describe(&e))),
                Some(Ok(frame)) => {
                    let Ok(data) = frame.into_data() else { continue };
                    if body.bytes().len() + data.len() > max_response_bytes {
                        return Err(WireError::TooLarge);
                    }
                    let at = lock(&conn.stamps).last_read.unwrap_or_else(Instant::now);
                    // Copied into the body's one buffer: the frame is a view of the
                    // connection's read buffer, which must not stay alive with the response.
                    if !body.push(at, &data) {
                        return Err(WireError::OverBudget);
                    }
                }
            }
        };
        trace.written = lock(&conn.stamps).last_write.unwrap_or(sent);
        if cut.is_none() {
            self.checkin(conn);
        }
        Ok(Delivery {
            sent,
            status: parts.status,
            content_type: content_type_of(&parts.headers),
            content_encoding: header_text(&parts.headers, hyper::header::CONTENT_ENCODING),
            body,
            cut,
            trace,
        })
    }
}

/// A response's `Content-Type` as text (an unreadable one is written lossily).
pub fn content_type_of(headers: &HeaderMap) -> Option<String> {
    header_text(headers, hyper::header::CONTENT_TYPE)
}

/// A response header's value as text (an unreadable one is written lossily).
pub fn header_text(headers: &HeaderMap, name: hyper::header::HeaderName) -> Option<String> {
    headers
        .get(name)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
}

/// How soon after the write a close without answer still means the server never read the
/// request: llama-server's close follows its previous response within a millisecond; a server
/// that read the request and then died takes longer than this to do it.
const UNREAD_CLOSE: std::time::Duration = std::time::Duration::from_millis(20);

/// Whether a reused connection's failure is the keep-alive race (RFC 9112 §9.3.1): the server
/// closed it without a byte of answer, right after the request was written, so it closed
/// without reading it; a close any later may follow a request it processed, and is not retried.
fn closed_unread(e: &hyper::Error, answered: bool, written: Option<Instant>) -> bool {
    e.is_incomplete_message() && !answered && written.is_some_and(|at| at.elapsed() < UNREAD_CLOSE)
}

pub use crate::net::describe;

/// A TCP stream that stamps its first write after each `arm` and the arrival of each read.
struct TimedStream {
    tcp: TcpStream,
    stamps: Shared,
    /// The kernel stamps this socket's received packets.
    kernel_stamps: bool,
    /// Where `recvmsg` writes (zeroed once; hyper's buffer is uninitialised memory, and zeroing
    /// it on every read would cost more than copying what arrived).
    scratch: Box<[u8]>,
}

/// Bytes one read takes at most.
const READ_BYTES: usize = 16 * 1024;

impl TimedStream {
    fn new(tcp: TcpStream, stamps: Shared) -> TimedStream {
        let kernel_stamps = kernel::enable(&tcp);
        TimedStream {
            tcp,
            stamps,
            kernel_stamps,
            scratch: vec![0; if kernel_stamps { READ_BYTES } else { 0 }].into_boxed_slice(),
        }
    }
}

impl AsyncRead for TimedStream {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if !this.kernel_stamps {
            let before = buf.filled().len();
            ready!(Pin::new(&mut this.tcp).poll_read(cx, buf))?;
            if buf.filled().len() > before {
                lock(&this.stamps).last_read = Some(Instant::now());
            }
            return Poll::Ready(Ok(()));
        }
        loop {
            ready!(this.tcp.poll_read_ready(cx))?;
            let room = buf.remaining().min(this.scratch.len());
            let scratch = &mut this.scratch[..room];
            match this
                .tcp
                .try_io(tokio::io::Interest::READABLE, || kernel::recv(&this.tcp, scratch))
            {
                Ok((n, at)) => {
                    buf.put_slice(&this.scratch[..n]);
                    if n > 0 {
                        lock(&this.stamps).last_read = Some(at);
                    }
                    return Poll::Ready(Ok(()));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }
}

impl AsyncWrite for TimedStream {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let at = Instant::now();
        let written = ready!(Pin::new(&mut this.tcp).poll_write(cx, data))?;
        let mut stamps = lock(&this.stamps);
        stamps.first_write.get_or_insert(at);
        stamps.last_write = Some(Instant::now());
        Poll::Ready(Ok(written))
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let at = Instant::now();
        let written = ready!(Pin::new(&mut this.tcp).poll_write_vectored(cx, bufs))?;
        let mut stamps = lock(&this.stamps);
        stamps.first_write.get_or_insert(at);
        stamps.last_write = Some(Instant::now());
        Poll::Ready(Ok(written))
    }

    fn is_write_vectored(&self) -> bool {
        self.tcp.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().tcp).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().tcp).poll_shutdown(cx)
    }
}

/// Kernel receive timestamps: Linux's `SO_TIMESTAMPNS`, read with `recvmsg`.
#[cfg(target_os = "linux")]
mod kernel {
    use std::io;
    use std::io::IoSliceMut;
    use std::os::fd::AsRawFd;
    use std::time::{Duration, SystemTime, UNIX_EPOCH};

    use nix::sys::socket::{recvmsg, setsockopt, sockopt, ControlMessageOwned, MsgFlags};
    use nix::sys::time::TimeSpec;
    use tokio::net::TcpStream;
    use tokio::time::Instant;

    /// A connection's socket, by descriptor.
    pub type Socket = std::os::fd::RawFd;

    pub fn socket_of(tcp: &TcpStream) -> Socket {
        tcp.as_raw_fd()
    }

    /// Whether the peer closed (or sent something unasked, which makes the connection unfit
    /// for another request): a non-blocking peek at the socket.
    pub fn peer_closed(socket: Socket) -> bool {
        let mut byte = [0u8; 1];
        !matches!(
            nix::sys::socket::recv(socket, &mut byte, MsgFlags::MSG_PEEK | MsgFlags::MSG_DONTWAIT),
            Err(nix::errno::Errno::EAGAIN)
        )
    }

    /// Ask the kernel to stamp this socket's packets; false when it will not.
    pub fn enable(tcp: &TcpStream) -> bool {
        setsockopt(tcp, sockopt::ReceiveTimestampns, &true).is_ok()
    }

    /// One `recvmsg` into `buf`: the byte count and when the newest packet read arrived (the
    /// read time when the kernel attached no stamp). Chunks that piled up while the client was
    /// busy come out of one read with the newest one's stamp: a client late by more than a
    /// chunk gap is still late for the older chunks, never early.
    pub fn recv(tcp: &TcpStream, buf: &mut [u8]) -> io::Result<(usize, Instant)> {
        let mut control = nix::cmsg_space!(TimeSpec);
        let mut iov = [IoSliceMut::new(buf)];
        let msg = recvmsg::<()>(tcp.as_raw_fd(), &mut iov, Some(&mut control), MsgFlags::MSG_DONTWAIT)
            .map_err(io::Error::from)?;
        let now = Instant::now();
        let wall = SystemTime::now();
        let stamp = msg.cmsgs().ok().and_then(|mut c| {
            c.find_map(|m| match m {
                ControlMessageOwned::ScmTimestampns(ts) => Some(ts),
                _ => None,
            })
        });
        Ok((msg.bytes, stamp.map_or(now, |ts| to_instant(ts, now, wall))))
    }

    /// A wall-clock kernel stamp as an `Instant`, by its age at (`now`, `wall`), the two clocks
    /// read back to back; a stamp from the future or older than a minute (the wall clock moved)
    /// counts as now.
    fn to_instant(ts: TimeSpec, now: Instant, wall: SystemTime) -> Instant {
        let Ok(nanos) = u32::try_from(ts.tv_nsec()) else {
            return now;
        };
        let Ok(secs) = u64::try_from(ts.tv_sec()) else {
            return now;
        };
        let stamped = UNIX_EPOCH + Duration::new(secs, nanos);
        match wall.duration_since(stamped) {
            Ok(age) if age < Duration::from_secs(60) => now.checked_sub(age).unwrap_or(now),
            _ => now,
        }
    }
}

/// Elsewhere: no kernel stamps; reads are stamped when they complete.
#[cfg(not(target_os = "linux"))]
mod kernel {
    use tokio::net::TcpStream;

    pub type Socket = ();

    pub fn socket_of(_tcp: &TcpStream) -> Socket {}

    /// Not known here: hyper sees the close when it reads.
    pub fn peer_closed(_socket: Socket) -> bool {
        false
    }

    pub fn enable(_tcp: &TcpStream) -> bool {
        false
    }

    pub fn recv(_tcp: &TcpStream, _buf: &mut [u8]) -> std::io::Result<(usize, tokio::time::Instant)> {
        Err(std::io::ErrorKind::Unsupported.into())
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use std::time::Duration;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    use super::*;

    fn test_charge() -> Charge {
        std::sync::Arc::new(Budget::new(1 << 30)).charge()
    }

    /// Read until the end of a request head; false when the client closed first.
    async fn read_head(socket: &mut tokio::net::TcpStream) -> bool {
        let mut buf = vec![0u8; 65536];
        let mut seen = Vec::new();
        while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = socket.read(&mut buf).await.unwrap();
            if n == 0 {
                return false;
            }
            seen.extend_from_slice(&buf[..n]);
        }
        true
    }

    /// When the server wrote each chunk, by its own clock (the same process's monotonic one).
    type Written = std::sync::Arc<std::sync::Mutex<Vec<Instant>>>;

    /// A server that answers every request on a connection with a chunked response: its head
    /// at once, then `first`, `gap_ms` later `second`; it notes when it wrote each chunk.
    async fn server(gap_ms: u64, first_ms: u64) -> (String, Written) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/v1/chat/completions", listener.local_addr().unwrap());
        let written = Written::default();
        let stamps = written.clone();
        tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            // As servers do: without it, Nagle holds the first chunk for the head's ACK.
            socket.set_nodelay(true).unwrap();
            // The 2-byte body comes with its head or before the next one: scanning for heads
            // is enough here.
            while read_head(&mut socket).await {
                let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
                socket.write_all(head.as_bytes()).await.unwrap();
                tokio::time::sleep(Duration::from_millis(first_ms)).await;
                stamps.lock().unwrap().push(Instant::now());
                socket.write_all(b"5\r\nfirst\r\n").await.unwrap();
                tokio::time::sleep(Duration::from_millis(gap_ms)).await;
                stamps.lock().unwrap().push(Instant::now());
                socket.write_all(b"6\r\nsecond\r\n0\r\n\r\n").await.unwrap();
            }
        });
        (url, written)
    }

    #[test]
    fn a_busy_client_still_stamps_when_the_bytes_arrived() {
        // Two threads: the server's, and the client's, which is blocked for 150 ms right after
        // it sends. The server writes the first chunk about 20 ms after the send and the second
        // 200 ms later, noting when by its own clock. Kernel stamps put each chunk within a few
        // ms of its write, not at the end of the block: held to the server's own stamps, the
        // check does not depend on how promptly a busy machine ran the server.
        let server_rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let (url, written) = server_rt.block_on(server(200, 20));
        let client_rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        client_rt.block_on(async {
            let wire = Wire::for_url(&url).expect("an http URL");
            for round in 0..2 {
                // The blocker runs once the request is on its way (the runtime has one thread).
                let blocker = tokio::spawn(async {
                    tokio::time::sleep(Duration::from_millis(2)).await;
                    std::thread::sleep(Duration::from_millis(150));
                });
                let d = wire
                    .post(&HeaderMap::new(), Bytes::from_static(b"{}"), 1 << 20, test_charge())
                    .await
                    .unwrap();
                blocker.await.unwrap();
                assert!(d.cut.is_none());
                assert_eq!(d.body.stamps().len(), 2, "round {round}");
                let server = written.lock().unwrap()[2 * round..2 * round + 2].to_vec();
                for (i, (stamp, at)) in d.body.stamps().iter().copied().zip(server).enumerate() {
                    // Received after it was written (to the clock's resolution) and long
                    // before the client could look: the block lasted 150 ms.
                    let late_ms = stamp.saturating_duration_since(at).as_secs_f64() * 1e3;
                    let early_ms = at.saturating_duration_since(stamp).as_secs_f64() * 1e3;
                    assert!(
                        early_ms < 1.0 && late_ms < 60.0,
                        "round {round}, chunk {i}: stamped {late_ms} ms after its write"
                    );
                }
                assert_eq!(&d.body.bytes()[..d.body.ends()[0]], b"first");
            }
        });
    }

    /// A server that answers one request per connection and then closes it without saying so
    /// (no `connection: close`), as a keep-alive timeout does.
    async fn one_shot_server() -> String {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/v1/completions", listener.local_addr().unwrap());
        tokio::spawn(async move {
            loop {
                let (mut socket, _) = listener.accept().await.unwrap();
                read_head(&mut socket).await;
                let reply = "HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok";
                socket.write_all(reply.as_bytes()).await.unwrap();
            }
        });
        url
    }

    #[tokio::test]
    async fn a_connection_the_server_closed_is_replaced() {
        let wire = Wire::for_url(&one_shot_server().await).unwrap();
        for round in 0..3 {
            let d = wire
                .post(&HeaderMap::new(), Bytes::from_static(b"{}"), 1 << 20, test_charge())
                .await
                .unwrap_or_else(|e| panic!("round {round}: {e:?}"));
            assert_eq!(d.status, 200);
            assert_eq!(d.body.bytes(), b"ok");
        }
    }

    /// Answers the first request of each connection, keeps it open, then reads the next request
    /// and closes without a byte of answer (what a reuse racing llama-server's close meets).
    async fn closes_after_reading_the_second_request(
        close_after_ms: u64,
    ) -> (String, Arc<std::sync::atomic::AtomicU64>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/v1/completions", listener.local_addr().unwrap());
        let connections = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let seen = connections.clone();
        tokio::spawn(async move {
            loop {
                let (mut socket, _) = listener.accept().await.unwrap();
                seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                tokio::spawn(async move {
                    if read_head(&mut socket).await {
                        let reply = "HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok";
                        socket.write_all(reply.as_bytes()).await.unwrap();
                        read_head(&mut socket).await;
                        tokio::time::sleep(Duration::from_millis(close_after_ms)).await;
                    }
                });
            }
        });
        (url, connections)
    }

    #[tokio::test]
    async fn a_request_the_server_closed_on_unanswered_is_sent_again_on_a_new_connection() {
        let (url, connections) = closes_after_reading_the_second_request(0).await;
        let wire = Wire::for_url(&url).unwrap();
        for round in 0..3 {
            let d = wire
                .post(&HeaderMap::new(), Bytes::from_static(b"{}"), 1 << 20, test_charge())
                .await
                .unwrap_or_else(|e| panic!("round {round}: {e:?}"));
            assert_eq!((d.status.as_u16(), d.body.bytes()), (200, &b"ok"[..]));
        }
        assert_eq!(connections.load(std::sync::atomic::Ordering::SeqCst), 3);
        // A close long after the request was written may follow a request the server worked
        // on: the failure is the request's, never sent twice.
        let (url, connections) = closes_after_reading_the_second_request(200).await;
        let wire = Wire::for_url(&url).unwrap();
        assert!(wire
            .post(&HeaderMap::new(), Bytes::from_static(b"{}"), 1 << 20, test_charge())
            .await
            .is_ok());
        assert!(wire
            .post(&HeaderMap::new(), Bytes::from_static(b"{}"), 1 << 20, test_charge())
            .await
            .is_err());
        assert_eq!(connections.load(std::sync::atomic::Ordering::SeqCst), 1);
    }

    #[test]
    fn only_plain_http_urls_without_credentials_take_the_wire() {
        assert!(Wire::for_url("http://127.0.0.1:8000/v1/completions").is_some());
        assert!(Wire::for_url("http://[::1]:8000/v1/completions?x=1").is_some());
        assert!(Wire::for_url("https://example.com/v1/completions").is_none());
        assert!(Wire::for_url("http://user:pw@example.com/v1/completions").is_none());
    }
}
