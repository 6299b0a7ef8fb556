//! The rounds: each a pair of arms in fresh processes, `--jobs` of them at a time.

use super::*;

/// What the rounds gave.
pub(super) struct Played {
    /// The rounds that finished, in their numbers' order.
    pub rounds: Vec<Round>,
    /// The signal that stopped them early.
    pub stopped_by: Option<i32>,
    /// Seconds from the first round's start to the last finished round's end: the
    /// pace (rounds in flight at a stop, thrown away, are not in it).
    pub seconds: f64,
}

/// The rounds, each arm a fresh process, which goes first alternating, `--jobs` of
/// them at a time; a stop after a round ends them (the signal returned), before any
/// is an error.
pub(super) fn play_rounds(args: &Args, count: u64, memory: u64) -> Result<Played, Failure> {
    use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
    let start = std::time::Instant::now();
    let last_done = std::sync::Mutex::new(std::time::Duration::ZERO);
    let next = AtomicU32::new(0);
    let stop = AtomicBool::new(false);
    let played = std::sync::Mutex::new(Vec::new());
    let first_error = std::sync::Mutex::new(None);
    std::thread::scope(|scope| {
        for _ in 0..args.jobs() {
            scope.spawn(|| {
                while !stop.load(Ordering::SeqCst) {
                    let round = next.fetch_add(1, Ordering::SeqCst);
                    if round >= args.rounds {
                        break;
                    }
                    match play_round(args, round, count, memory) {
                        Ok(r) => {
                            lock(&played).push((round, r));
                            *lock(&last_done) = start.elapsed();
                        }
                        Err(e) => {
                            stop.store(true, Ordering::SeqCst);
                            lock(&first_error).get_or_insert(e);
                        }
                    }
                }
            });
        }
    });
    let mut played = played.into_inner().unwrap_or_else(|e| e.into_inner());
    played.sort_by_key(|(round, _)| *round);
    let rounds: Vec<Round> = played.into_iter().map(|(_, r)| r).collect();
    let seconds = lock(&last_done).as_secs_f64();
    let stopped_by = match first_error.into_inner().unwrap_or_else(|e| e.into_inner()) {
        None => None,
        // Stopped as asked: the rounds that finished are reported.
        Some(Failure::Interrupted(signal)) if !rounds.is_empty() => Some(signal),
        Some(Failure::Interrupted(signal)) => return Err(stopped_before_a_round(signal)),
        Some(e) => return Err(e),
    };
    Ok(Played {
        rounds,
        stopped_by,
        seconds,
    })
}

fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Round number `round`: the plain loop first in even rounds, the engine in odd.
fn play_round(args: &Args, round: u32, count: u64, memory: u64) -> Result<Round, Failure> {
    let (plain, engine) = if round % 2 == 0 {
        let plain = spawn_arm(Arm::Plain, args, count, memory)?;
        (plain, spawn_arm(Arm::Engine, args, count, memory)?)
    } else {
        let engine = spawn_arm(Arm::Engine, args, count, memory)?;
        (spawn_arm(Arm::Plain, args, count, memory)?, engine)
    };
    crate::verbose!(
        "bench: round {} of {}: ratio {:.3}",
        round + 1,
        args.rounds,
        engine.rate / plain.rate
    );
    Ok(Round {
        plain: plain.rate,
        engine: engine.rate,
        ratio: engine.rate / plain.rate,
        plain_seconds: plain.seconds,
        engine_seconds: engine.seconds,
    })
}
