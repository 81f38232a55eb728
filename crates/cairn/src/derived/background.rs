//! The repository handle's background threads: work that makes later queries cheaper and
//! never changes an answer — reading the dense rows of loaded parts that keep them in
//! memory (`rows.rs`), storing the unit texts of the commit a view's text lane is based
//! on (`base_texts.rs`), dropping the views the cache let go of (`build.rs`).
//!
//! Jobs come in two kinds ([`Urgency`]), each with a queue and at most one thread taking
//! its jobs in order, started when jobs are queued and ending when none is left. Work the
//! next queries need soon (reading rows they would otherwise read themselves, a page fault
//! and a positional read each), and every store write, runs at normal priority. Work for
//! another process's later queries (building unit texts: seconds at 1M nodes) runs on
//! Linux under `SCHED_IDLE`, getting a core only when no other thread of the machine
//! wants one; it hands its writes to the first kind ([`Background::soon`]), so that a
//! starved thread never holds the store's write lock. (A thread never leaves `SCHED_IDLE`
//! again: an unprivileged one may not, so each kind has its own.) Dropped with the handle:
//! the threads are stopped (between two jobs, or inside one that checks the flag) and
//! joined, so that none keeps the store open after the handle; queued jobs are dropped. A
//! job that does not run leaves its work to the query that needs it — except the unit
//! texts owed to later processes, which the closing handle finishes itself
//! (`base_texts.rs`).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use parking_lot::Mutex;

/// One piece of background work; the flag says the handle is closing (a long job checks it
/// and returns early).
pub(crate) type Job = Box<dyn FnOnce(&AtomicBool) + Send>;

/// When a job should run (module docs).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Urgency {
    /// At normal priority.
    Soon,
    /// Only on an otherwise idle core.
    Idle,
}

/// The handle's background threads and their queues (module docs).
#[derive(Default)]
pub(crate) struct Background {
    soon: Arc<Queue>,
    idle: Arc<Queue>,
}

/// One kind's queue, shared with its thread and with jobs that queue more work.
#[derive(Default)]
pub(crate) struct Queue {
    stop: AtomicBool,
    /// The jobs, and whether a thread is taking them.
    jobs: Mutex<(VecDeque<Job>, bool)>,
    /// The thread, and any before it not yet seen to end.
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl Background {
    /// Queues `jobs` of one urgency, starting its thread if none runs.
    pub(crate) fn run(&self, urgency: Urgency, jobs: impl IntoIterator<Item = Job>) {
        match urgency {
            Urgency::Soon => self.soon.run(false, jobs),
            Urgency::Idle => self.idle.run(true, jobs),
        }
    }

    /// Drops `values` on the [`Urgency::Soon`] thread, so that freeing them stays off the
    /// caller's path (an evicted view of a large commit lets go of thousands of parts'
    /// references: ~1 ms at 1M nodes). Dropped at once if the handle is closing.
    pub(crate) fn drop_later<T: Send + 'static>(&self, values: Vec<T>) {
        if values.is_empty() {
            return;
        }
        self.run(Urgency::Soon, [Box::new(move |_: &AtomicBool| drop(values)) as Job]);
    }

    /// The queue of [`Urgency::Soon`] jobs, for an idle job to hand its writes to
    /// ([`Queue::run_soon`]).
    pub(crate) fn soon(&self) -> Arc<Queue> {
        Arc::clone(&self.soon)
    }

    /// Jobs queued and not yet started.
    pub(crate) fn queued(&self) -> usize {
        self.soon.jobs.lock().0.len() + self.idle.jobs.lock().0.len()
    }

    /// True while a job is queued or running. The idle queue is asked first: once its thread
    /// has ended, every write it handed over is on the other.
    pub(crate) fn busy(&self) -> bool {
        [&self.idle, &self.soon].iter().any(|q| {
            let jobs = q.jobs.lock();
            jobs.1 || !jobs.0.is_empty()
        })
    }
}

impl Queue {
    /// Queues `job` on this queue of [`Urgency::Soon`] jobs ([`Background::soon`]).
    pub(crate) fn run_soon(self: &Arc<Self>, job: Job) {
        self.run(false, [job]);
    }

    fn run(self: &Arc<Self>, idle: bool, jobs: impl IntoIterator<Item = Job>) {
        let mut queue = self.jobs.lock();
        if self.stop.load(Ordering::Relaxed) {
            return;
        }
        queue.0.extend(jobs);
        if queue.1 || queue.0.is_empty() {
            return;
        }
        queue.1 = true;
        drop(queue);
        let shared = Arc::clone(self);
        let spawned = std::thread::Builder::new()
            .name(if idle { "cairn-idle" } else { "cairn-background" }.into())
            .spawn(move || {
                if idle {
                    run_when_idle();
                }
                loop {
                    let next = {
                        let mut queue = shared.jobs.lock();
                        match queue.0.pop_front() {
                            Some(job) if !shared.stop.load(Ordering::Relaxed) => job,
                            _ => {
                                queue.0.clear();
                                queue.1 = false;
                                return;
                            }
                        }
                    };
                    next(&shared.stop);
                }
            });
        match spawned {
            Ok(t) => {
                let mut threads = self.threads.lock();
                threads.retain(|t| !t.is_finished());
                threads.push(t);
            }
            // A thread that cannot be started leaves the work to the queries that need it.
            Err(_) => {
                let mut queue = self.jobs.lock();
                queue.0.clear();
                queue.1 = false;
            }
        }
    }

    /// Stops the queue's thread and waits for it.
    fn close(&self) {
        self.stop.store(true, Ordering::Relaxed);
        let threads = std::mem::take(&mut *self.threads.lock());
        for t in threads {
            // A job that panicked kept nothing it did not check; nothing to undo.
            let _ = t.join();
        }
        self.jobs.lock().0.clear();
    }
}

impl Background {
    /// Stops both threads and waits for them; queued jobs are dropped and later ones
    /// refused. Idempotent (the handle's close calls it, then drop).
    pub(crate) fn close(&self) {
        // The idle thread first: it may queue writes on the other until it stops.
        self.idle.close();
        self.soon.close();
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        self.close();
    }
}

/// Runs the calling thread only when a core would otherwise be idle (Linux `SCHED_IDLE`;
/// elsewhere, and where the call fails, at normal priority).
fn run_when_idle() {
    #[cfg(target_os = "linux")]
    {
        let param = libc::sched_param { sched_priority: 0 };
        // SAFETY: `sched_setscheduler` reads `param` only during the call; pid 0 is the
        // calling thread. A failure leaves the thread's policy as it was.
        unsafe {
            libc::sched_setscheduler(0, libc::SCHED_IDLE, &param);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;
    use std::time::Duration;

    use super::*;

    /// A job that runs until the handle closes, then counts itself.
    fn until_stopped(ran: &Arc<AtomicUsize>) -> Job {
        let ran = Arc::clone(ran);
        Box::new(move |stop: &AtomicBool| {
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(1));
            }
            ran.fetch_add(1, Ordering::SeqCst);
        })
    }

    #[test]
    fn dropping_stops_the_running_jobs_and_drops_the_queued_ones() {
        let ran = Arc::new(AtomicUsize::new(0));
        let never = Arc::new(AtomicUsize::new(0));
        let bg = Background::default();
        for urgency in [Urgency::Soon, Urgency::Idle] {
            bg.run(urgency, [until_stopped(&ran), until_stopped(&never)]);
        }
        // Both threads hold their first job; the second of each waits behind it.
        while bg.queued() > 2 {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(bg.busy());
        drop(bg);
        // Dropping returned: both threads were joined, each after its running job saw
        // the flag; the queued jobs never ran.
        assert_eq!(ran.load(Ordering::SeqCst), 2);
        assert_eq!(never.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn an_idle_job_hands_its_write_to_the_soon_thread() {
        let bg = Background::default();
        let (tx, rx) = std::sync::mpsc::channel();
        let soon = bg.soon();
        bg.run(
            Urgency::Idle,
            [Box::new(move |_: &AtomicBool| {
                let idle = std::thread::current().name().map(str::to_string);
                soon.run_soon(Box::new(move |_: &AtomicBool| {
                    let _ = tx.send((idle, std::thread::current().name().map(str::to_string)));
                }));
            }) as Job],
        );
        let (idle, soon) = rx.recv_timeout(Duration::from_secs(600)).unwrap();
        assert_eq!(idle.as_deref(), Some("cairn-idle"));
        assert_eq!(soon.as_deref(), Some("cairn-background"));
        while bg.busy() {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(bg.queued(), 0);
    }
}
