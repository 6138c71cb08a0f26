//! The fake system layer: what `once.rs` asks of `super::sys`. Each model
//! thread says who it is ([`enter`]): its thread id, fork generation and
//! token, and the model's [`World`] (which threads are gone, and the
//! deliberately wrong variants the wrong twins run).

#[cfg(loom)]
pub(crate) use loom::sync::Arc;
pub use std::sync::atomic::Ordering;
#[cfg(not(loom))]
pub(crate) use std::sync::Arc;

use std::cell::RefCell;

/// The deliberately wrong variants (each model's wrong twin uses one).
#[derive(Clone, Copy, Default)]
pub struct Wrong {
    /// Every ordering weakened to `Relaxed` (loom's atomics only).
    pub relaxed: bool,
    /// A slot's (an `AtomicPtr`'s) compare-and-exchange done as a plain
    /// store (the old unconditional publication; loom's atomics only).
    pub cas_is_store: bool,
    /// No thread token: the thread id alone tells re-entrancy (the old rule).
    pub no_token: bool,
    /// A new token at every ask: no per-thread marker at all.
    pub token_per_call: bool,
    /// Every thread is said to exist (no liveness check).
    pub all_alive: bool,
}

/// What the model's threads share.
pub struct World {
    /// Bit `i`: thread id `i` is gone.
    gone: AtomicU32,
    pub wrong: Wrong,
}

impl World {
    pub fn new(wrong: Wrong) -> Arc<World> {
        Arc::new(World {
            gone: AtomicU32::new(0),
            wrong,
        })
    }

    /// Thread `id` no longer exists (it ended, or is not in this process).
    pub fn end(&self, id: u32) {
        self.gone.fetch_or(1 << id, Ordering::SeqCst);
    }
}

/// Who a model thread is.
#[derive(Clone, Copy)]
pub struct Thread {
    pub id: u32,
    pub generation: u32,
    pub token: usize,
}

struct Current {
    world: Arc<World>,
    thread: Thread,
    next_token: usize,
    /// Run at this thread's next [`thread_token`] (a signal handler that
    /// interrupts it there: in `Once::call`, between the claim and the
    /// storing of the owner's token).
    on_token: Option<Box<dyn FnOnce()>>,
}

#[cfg(loom)]
loom::thread_local! {
    static CURRENT: RefCell<Option<Current>> = RefCell::new(None);
}
#[cfg(not(loom))]
std::thread_local! {
    static CURRENT: RefCell<Option<Current>> = const { RefCell::new(None) };
}

/// Says who this thread is, in which world.
pub fn enter(world: &Arc<World>, thread: Thread) {
    CURRENT.with(|c| {
        *c.borrow_mut() = Some(Current {
            world: world.clone(),
            thread,
            next_token: 1_000,
            on_token: None,
        })
    });
}

fn with<T>(f: impl FnOnce(&mut Current) -> T) -> T {
    CURRENT.with(|c| f(c.borrow_mut().as_mut().expect("sys::enter first")))
}

#[cfg(loom)]
fn wrong() -> Wrong {
    CURRENT.with(|c| {
        c.borrow()
            .as_ref()
            .map(|c| c.world.wrong)
            .unwrap_or_default()
    })
}

pub fn fork_generation() -> u32 {
    with(|c| c.thread.generation)
}

pub fn thread_id() -> u32 {
    with(|c| c.thread.id)
}

/// Runs `f` at this thread's next [`thread_token`], as a signal handler
/// arriving there would.
pub fn on_next_token(f: impl FnOnce() + 'static) {
    with(|c| c.on_token = Some(Box::new(f)));
}

pub fn thread_token() -> usize {
    // Taken out first: the handler calls this module again.
    if let Some(handler) = with(|c| c.on_token.take()) {
        handler();
    }
    with(|c| {
        if c.world.wrong.no_token {
            0
        } else if c.world.wrong.token_per_call {
            c.next_token += 1;
            c.next_token
        } else {
            c.thread.token
        }
    })
}

pub fn thread_exists(id: u32) -> bool {
    let world = with(|c| c.world.clone());
    world.wrong.all_alive || world.gone.load(Ordering::SeqCst) & (1 << id) == 0
}

pub fn spin() {
    yield_now();
}

pub fn yield_now() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    std::thread::yield_now();
}

pub fn sleep_briefly() {
    yield_now();
}

#[cfg(not(loom))]
pub use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, AtomicUsize};

#[cfg(loom)]
fn weaken(o: Ordering) -> Ordering {
    if wrong().relaxed {
        Ordering::Relaxed
    } else {
        o
    }
}

#[cfg(loom)]
macro_rules! atomic {
    ($name:ident, $t:ty) => {
        /// loom's, with the wrong variants.
        pub struct $name(loom::sync::atomic::$name);

        impl $name {
            pub fn new(v: $t) -> $name {
                $name(loom::sync::atomic::$name::new(v))
            }
            pub fn load(&self, o: Ordering) -> $t {
                self.0.load(weaken(o))
            }
            pub fn store(&self, v: $t, o: Ordering) {
                self.0.store(v, weaken(o))
            }
            pub fn fetch_add(&self, v: $t, o: Ordering) -> $t {
                self.0.fetch_add(v, weaken(o))
            }
            pub fn fetch_or(&self, v: $t, o: Ordering) -> $t {
                self.0.fetch_or(v, weaken(o))
            }
            pub fn compare_exchange(
                &self,
                current: $t,
                new: $t,
                success: Ordering,
                failure: Ordering,
            ) -> Result<$t, $t> {
                let failure = weaken(failure);
                let success = match (weaken(success), failure) {
                    (Ordering::Relaxed, Ordering::Acquire) => Ordering::Acquire,
                    (s, _) => s,
                };
                self.0.compare_exchange(current, new, success, failure)
            }
        }
    };
}

#[cfg(loom)]
atomic!(AtomicU32, u32);
#[cfg(loom)]
atomic!(AtomicU64, u64);
#[cfg(loom)]
atomic!(AtomicUsize, usize);

/// loom's, with the wrong variants: a slot (`publish`).
#[cfg(loom)]
pub struct AtomicPtr<T>(loom::sync::atomic::AtomicPtr<T>);

#[cfg(loom)]
impl<T> AtomicPtr<T> {
    pub fn new(v: *mut T) -> AtomicPtr<T> {
        AtomicPtr(loom::sync::atomic::AtomicPtr::new(v))
    }
    pub fn load(&self, o: Ordering) -> *mut T {
        self.0.load(weaken(o))
    }
    pub fn store(&self, v: *mut T, o: Ordering) {
        self.0.store(v, weaken(o))
    }
    pub fn compare_exchange(
        &self,
        current: *mut T,
        new: *mut T,
        success: Ordering,
        failure: Ordering,
    ) -> Result<*mut T, *mut T> {
        if wrong().cas_is_store {
            self.0.store(new, weaken(success));
            return Ok(current);
        }
        let failure = weaken(failure);
        let success = match (weaken(success), failure) {
            (Ordering::Relaxed, Ordering::Acquire) => Ordering::Acquire,
            (s, _) => s,
        };
        self.0.compare_exchange(current, new, success, failure)
    }
}
