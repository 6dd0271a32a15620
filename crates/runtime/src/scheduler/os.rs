//! The few operating-system calls a scheduler thread makes: CPU affinity, priority and its
//! own CPU time.

use std::io;
use std::mem::MaybeUninit;

/// CPUs this process may run on.
pub fn available_cpus() -> io::Result<Vec<u16>> {
    let mut set = MaybeUninit::<libc::cpu_set_t>::zeroed();
    // SAFETY: `set` is a valid, writable cpu_set_t of the size we pass; pid 0 is this thread,
    // whose mask is the process mask at start-up.
    let result = unsafe {
        libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), set.as_mut_ptr())
    };
    if result != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: zero-initialised and then filled by a successful sched_getaffinity.
    let set = unsafe { set.assume_init() };
    let cpus = (0..libc::CPU_SETSIZE as usize).filter(|&cpu| {
        // SAFETY: `cpu` is below CPU_SETSIZE, so the bit lies inside `set`.
        unsafe { libc::CPU_ISSET(cpu, &set) }
    });
    Ok(cpus.map(|cpu| cpu as u16).collect())
}

/// Restricts the calling thread to `cpus`.
pub fn bind_current_thread(cpus: &[u16]) -> io::Result<()> {
    // SAFETY: an all-zero cpu_set_t is the empty set.
    let mut set: libc::cpu_set_t = unsafe { MaybeUninit::zeroed().assume_init() };
    for &cpu in cpus {
        let cpu = usize::from(cpu);
        if cpu >= libc::CPU_SETSIZE as usize {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "CPU number too large",
            ));
        }
        // SAFETY: `cpu` is below CPU_SETSIZE, so the bit lies inside `set`.
        unsafe { libc::CPU_SET(cpu, &mut set) };
    }
    // SAFETY: `set` is a valid cpu_set_t of the size we pass; pid 0 is the calling thread.
    let result =
        unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if result != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Sets the calling thread's nice value from a `thread_prio` of 0..=10 (10 highest):
/// nice = 20 - 4 * thread_prio, clamped to -20..=19.
pub fn set_current_thread_priority(thread_prio: u8) -> io::Result<()> {
    let nice = (20 - 4 * i32::from(thread_prio)).clamp(-20, 19);
    // SAFETY: gettid has no preconditions.
    let tid = unsafe { libc::gettid() };
    // SAFETY: setpriority on our own thread id with a value in range has no memory effects.
    let result = unsafe { libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, nice) };
    if result != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Switches the calling thread to real-time FIFO scheduling at a middle priority.
pub fn set_current_thread_realtime() -> io::Result<()> {
    let param = libc::sched_param { sched_priority: 50 };
    // SAFETY: `param` is a valid sched_param; pid 0 is the calling thread.
    let result = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) };
    if result != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// User and system CPU time of the calling thread, in microseconds.
pub fn current_thread_cpu_us() -> (u64, u64) {
    let mut usage = MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: `usage` is a valid, writable rusage; RUSAGE_THREAD reports the calling thread.
    let result = unsafe { libc::getrusage(libc::RUSAGE_THREAD, usage.as_mut_ptr()) };
    if result != 0 {
        return (0, 0);
    }
    // SAFETY: zero-initialised and then filled by a successful getrusage.
    let usage = unsafe { usage.assume_init() };
    let micros = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    (micros(usage.ru_utime), micros(usage.ru_stime))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_has_at_least_one_cpu_and_can_bind_to_it() {
        let cpus = available_cpus().unwrap();
        assert!(!cpus.is_empty());
        std::thread::spawn(move || bind_current_thread(&cpus[..1]).unwrap())
            .join()
            .unwrap();
    }

    #[test]
    fn a_busy_thread_accumulates_cpu_time() {
        let (user_before, system_before) = current_thread_cpu_us();
        let mut x = 0u64;
        while current_thread_cpu_us().0 + current_thread_cpu_us().1
            < user_before + system_before + 5_000
        {
            x = x.wrapping_add(std::hint::black_box(1));
        }
        assert!(x > 0);
    }
}
