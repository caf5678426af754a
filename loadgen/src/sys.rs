//! The few Linux calls the client makes directly: the monotonic clock, CPU time, the affinity
//! mask, the file descriptor limit, sockets bound to a source address, and a timerfd.

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// CLOCK_MONOTONIC in nanoseconds: the clock of Python's `time.monotonic_ns()`, so the harness
/// can cut its samples of the server to the client's window. A vDSO call, no syscall.
#[inline]
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: ts is a valid timespec; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Sleep until CLOCK_MONOTONIC reaches `at_ns` (at once if it has).
pub fn sleep_until(at_ns: u64) {
    let ts = libc::timespec { tv_sec: (at_ns / 1_000_000_000) as libc::time_t, tv_nsec: (at_ns % 1_000_000_000) as libc::c_long };
    if now_ns() >= at_ns {
        return;
    }
    // SAFETY: ts is a valid timespec; an absolute sleep interrupted by a signal is resumed with
    // the same end time.
    while unsafe { libc::clock_nanosleep(libc::CLOCK_MONOTONIC, libc::TIMER_ABSTIME, &ts, std::ptr::null_mut()) } == libc::EINTR {}
}

/// User and system CPU seconds of this process so far (all threads).
pub fn cpu_times() -> (f64, f64) {
    // SAFETY: rusage is plain data, zeroed is a valid value; getrusage fills it.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let secs = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    (secs(ru.ru_utime), secs(ru.ru_stime))
}

/// The CPUs this process may run on (its affinity mask), at least 1.
pub fn affinity_cpus() -> usize {
    // SAFETY: cpu_set_t is plain data; sched_getaffinity fills it for the calling thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return 1;
        }
        (libc::CPU_COUNT(&set) as usize).max(1)
    }
}

/// Pins this process (every thread it starts afterwards) to the CPUs of a list like `0,2` or
/// `0-3`: what the harness asks of an agent on a host where nothing else can pin it.
pub fn pin(list: &str) -> Result<(), String> {
    // SAFETY: cpu_set_t is plain data, zeroed is an empty set; CPU_SET is bounds-checked below.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let max = 8 * std::mem::size_of::<libc::cpu_set_t>();
    for part in list.split(',') {
        let (lo, hi) = match part.split_once('-') {
            Some((a, b)) => (a, b),
            None => (part, part),
        };
        let parse = |t: &str| t.trim().parse::<usize>().map_err(|_| format!("--pin {list:?}: not a CPU list like 0,2 or 0-3"));
        let (lo, hi) = (parse(lo)?, parse(hi)?);
        if lo > hi || hi >= max {
            return Err(format!("--pin {list:?}: CPUs go from 0 to {}, low to high", max - 1));
        }
        for cpu in lo..=hi {
            // SAFETY: cpu < the set's size, checked above.
            unsafe { libc::CPU_SET(cpu, &mut set) };
        }
    }
    // SAFETY: set is a valid cpu_set_t of the size passed.
    if unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) } != 0 {
        return Err(format!("--pin {list}: {}", io::Error::last_os_error()));
    }
    Ok(())
}

/// The soft limit on open file descriptors.
pub fn fd_limit() -> u64 {
    let mut rl = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: rl is a valid rlimit.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) } != 0 {
        return 1024;
    }
    rl.rlim_cur
}

fn check(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

fn setsockopt_int(fd: RawFd, level: libc::c_int, name: libc::c_int, value: libc::c_int) -> io::Result<()> {
    // SAFETY: value lives for the call; the length matches its type.
    check(unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            &value as *const libc::c_int as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    })
    .map(|_| ())
}

fn sockaddr(addr: SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: sockaddr_storage is large enough and aligned for both families.
    let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let len = match addr {
        SocketAddr::V4(a) => {
            let sin = unsafe { &mut *(&mut storage as *mut _ as *mut libc::sockaddr_in) };
            sin.sin_family = libc::AF_INET as libc::sa_family_t;
            sin.sin_port = a.port().to_be();
            sin.sin_addr = libc::in_addr { s_addr: u32::from(*a.ip()).to_be() };
            std::mem::size_of::<libc::sockaddr_in>()
        }
        SocketAddr::V6(a) => {
            let sin6 = unsafe { &mut *(&mut storage as *mut _ as *mut libc::sockaddr_in6) };
            sin6.sin6_family = libc::AF_INET6 as libc::sa_family_t;
            sin6.sin6_port = a.port().to_be();
            sin6.sin6_addr = libc::in6_addr { s6_addr: a.ip().octets() };
            sin6.sin6_flowinfo = a.flowinfo();
            sin6.sin6_scope_id = a.scope_id();
            std::mem::size_of::<libc::sockaddr_in6>()
        }
    };
    (storage, len as libc::socklen_t)
}

/// Outcome of starting a non-blocking connect.
pub enum Connect {
    /// Connected already (loopback sometimes completes at once).
    Done(mio::net::TcpStream),
    /// In progress: writable (or an error) will be reported on the socket.
    Pending(mio::net::TcpStream),
}

/// A non-blocking TCP connect to `target` with TCP_NODELAY set. With `source`, the socket is
/// first bound to that address with IP_BIND_ADDRESS_NO_PORT, so that the kernel picks the
/// ephemeral port at connect time for the whole 4-tuple: each source address then has its own
/// port range, which is what lets short connections go past ~28,000 in a minute.
pub fn connect(target: SocketAddr, source: Option<IpAddr>) -> io::Result<Connect> {
    let family = if target.is_ipv4() { libc::AF_INET } else { libc::AF_INET6 };
    // SAFETY: plain socket(2); the fd is owned right away so every error path closes it.
    let fd = check(unsafe { libc::socket(family, libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, 0) })?;
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let raw = fd.as_raw_fd();
    // Requests go out in one write; without NODELAY the tail segment of a large one could wait
    // for an ACK (Nagle), adding a delay that is the client's, not the server's.
    setsockopt_int(raw, libc::IPPROTO_TCP, libc::TCP_NODELAY, 1)?;
    if let Some(src) = source {
        // an IPPROTO_IP option, honoured by IPv6 sockets too
        setsockopt_int(raw, libc::IPPROTO_IP, libc::IP_BIND_ADDRESS_NO_PORT, 1)?;
        let (sa, len) = sockaddr(SocketAddr::new(src, 0));
        // SAFETY: sa/len describe a valid sockaddr of the socket's family.
        check(unsafe { libc::bind(raw, &sa as *const _ as *const libc::sockaddr, len) })?;
    }
    let (sa, len) = sockaddr(target);
    // SAFETY: sa/len describe a valid sockaddr of the socket's family.
    let ret = unsafe { libc::connect(raw, &sa as *const _ as *const libc::sockaddr, len) };
    let pending = if ret == 0 {
        false
    } else {
        let err = io::Error::last_os_error();
        if err.raw_os_error() != Some(libc::EINPROGRESS) {
            return Err(err);
        }
        true
    };
    let std_stream = std::net::TcpStream::from(fd);
    let stream = mio::net::TcpStream::from_std(std_stream);
    Ok(if pending { Connect::Pending(stream) } else { Connect::Done(stream) })
}

/// A CLOCK_MONOTONIC timerfd, to wake the event loop at a scheduled send time with
/// sub-millisecond precision (epoll_wait's own timeout has millisecond resolution).
pub struct TimerFd {
    fd: OwnedFd,
    armed_ns: u64,
}

impl TimerFd {
    pub fn new() -> io::Result<TimerFd> {
        // SAFETY: plain timerfd_create.
        let fd = check(unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_NONBLOCK | libc::TFD_CLOEXEC) })?;
        Ok(TimerFd { fd: unsafe { OwnedFd::from_raw_fd(fd) }, armed_ns: 0 })
    }

    pub fn raw(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// The time it is armed for (0: not armed or already fired and cleared).
    pub fn armed(&self) -> u64 {
        self.armed_ns
    }

    /// Fire once at the absolute monotonic time `at_ns` (> 0).
    pub fn arm(&mut self, at_ns: u64) {
        let spec = libc::itimerspec {
            it_interval: libc::timespec { tv_sec: 0, tv_nsec: 0 },
            it_value: libc::timespec { tv_sec: (at_ns / 1_000_000_000) as libc::time_t, tv_nsec: (at_ns % 1_000_000_000) as libc::c_long },
        };
        // SAFETY: spec is valid; the old value is not asked for.
        unsafe { libc::timerfd_settime(self.fd.as_raw_fd(), libc::TFD_TIMER_ABSTIME, &spec, std::ptr::null_mut()) };
        self.armed_ns = at_ns;
    }

    /// Consume an expiry so that the next one is reported again.
    pub fn clear(&mut self) {
        let mut buf = [0u8; 8];
        // SAFETY: reads at most 8 bytes into buf; EAGAIN is fine.
        unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr() as *mut libc::c_void, 8) };
        self.armed_ns = 0;
    }
}
