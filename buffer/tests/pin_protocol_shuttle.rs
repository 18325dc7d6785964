//! Goal: the frame pin/claim protocol (`nvpage_buffer::pin::PinState`) is checked on shuttle's
//! schedulers (random, PCT, and exhaustive DFS on the smallest configuration): pinners doing
//! `try_pin`/`unpin` race a claimer doing `try_claim` then `claim_to_pin` or `release_claim`.
//! Invariants: a claim succeeds only when no pin is held; while claimed, no `try_pin` succeeds;
//! the pin count never wraps, and ends at zero. Run with
//! `cargo test -p nvpage-buffer --features shuttle --test pin_protocol_shuttle` (the feature
//! compiles `PinState` against shuttle's atomics, so only this test runs with it).

#![cfg(feature = "shuttle")]

// The test's bookkeeping uses std's atomics on purpose: shuttle runs one thread at a time, so they
// are exact, and only the protocol's own operations are scheduling points.
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use nvpage_buffer::pin::PinState;
use shuttle::thread;

/// The test's own view, kept next to the protocol: how many pins the pinners believe they hold,
/// and whether the claimer believes it owns the frame. Updated right after each successful step
/// (and right before each release), so a violation shows up as a contradiction between them.
struct World {
    state: PinState,
    held_pins: AtomicU32,
    claimed: AtomicU32,
}

fn check_invariants(w: &World) {
    let pins = w.state.pins();
    assert!(pins < 1 << 16, "the pin count wrapped: {pins:#x}");
}

/// `pinners` threads each pin and unpin `rounds` times; one claimer tries to claim, and either
/// reuses the frame (claim → pin → unpin) or gives up the claim.
fn scenario(pinners: usize, rounds: usize, reuse: bool) {
    let w = Arc::new(World {
        state: PinState::new(),
        held_pins: AtomicU32::new(0),
        claimed: AtomicU32::new(0),
    });
    let mut handles = Vec::new();
    for _ in 0..pinners {
        let w = w.clone();
        handles.push(thread::spawn(move || {
            for _ in 0..rounds {
                if w.state.try_pin() {
                    assert_eq!(w.claimed.load(Ordering::SeqCst), 0, "pinned a claimed frame");
                    w.held_pins.fetch_add(1, Ordering::SeqCst);
                    check_invariants(&w);
                    assert!(w.state.pins() >= 1, "a held pin is counted");
                    w.held_pins.fetch_sub(1, Ordering::SeqCst);
                    w.state.unpin();
                }
                check_invariants(&w);
            }
        }));
    }
    let claimer = {
        let w = w.clone();
        thread::spawn(move || {
            for _ in 0..2 {
                if !w.state.try_claim() {
                    continue;
                }
                assert_eq!(w.held_pins.load(Ordering::SeqCst), 0, "claimed a pinned frame");
                w.claimed.store(1, Ordering::SeqCst);
                assert!(w.state.is_claimed());
                check_invariants(&w);
                // While claimed, transient pins may come and go, but none is granted.
                assert_eq!(
                    w.held_pins.load(Ordering::SeqCst),
                    0,
                    "a pin was granted while claimed"
                );
                w.claimed.store(0, Ordering::SeqCst);
                if reuse {
                    // Loaded a new page: the claim becomes the loader's pin, then is dropped.
                    w.state.claim_to_pin();
                    assert!(!w.state.is_claimed());
                    assert!(w.state.pins() >= 1);
                    w.state.unpin();
                } else {
                    w.state.release_claim();
                }
                check_invariants(&w);
            }
        })
    };
    for h in handles {
        h.join().unwrap();
    }
    claimer.join().unwrap();
    assert_eq!(w.state.pins(), 0, "every pin was returned");
    assert!(!w.state.is_claimed(), "every claim was turned into a pin or released");
    assert!(w.state.try_claim(), "an idle frame can be claimed");
}

#[test]
fn random_schedules_two_pinners() {
    shuttle::check_random(|| scenario(2, 3, true), 2_000);
    shuttle::check_random(|| scenario(2, 3, false), 2_000);
}

#[test]
fn pct_schedules_three_pinners() {
    shuttle::check_pct(|| scenario(3, 2, true), 2_000, 3);
    shuttle::check_pct(|| scenario(3, 2, false), 2_000, 3);
}

#[test]
fn every_schedule_of_one_pinner() {
    shuttle::check_dfs(|| scenario(1, 2, true), Some(200_000));
    shuttle::check_dfs(|| scenario(1, 2, false), Some(200_000));
}
