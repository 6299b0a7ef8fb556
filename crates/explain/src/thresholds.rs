//! The numbers every judgement uses, in one place: when a reading is at its limit,
//! when two counts are the same failure, how far a line may be extrapolated, when a
//! time is a time limit.

/// A reading within this share of its limit counts as at the limit (when one
/// buffer's growth is smaller).
pub const AT_LIMIT_SHARE: f64 = 0.01;
/// A predicted count matches a failing count within this share, or
/// [`MATCH_BUFFERS`], whichever is larger.
pub const MATCH_SHARE: f64 = 0.02;
/// See [`MATCH_SHARE`].
pub const MATCH_BUFFERS: u64 = 2;
/// Extrapolations stop this many times past the buffers a run reached.
pub const HORIZON: u64 = 10;
/// An experiment's failing count is where its candidate's line predicts within this
/// share (or the replicates' noise, when larger).
pub const MOVED_SHARE: f64 = 0.05;
/// Replicates within this share of the count (or [`MIN_SLACK`]) agree.
pub const REPLICATE_SHARE: f64 = 0.02;
/// The least slack a count is judged with, buffers.
pub const MIN_SLACK: u64 = 2;
/// Replicates' failure times within this share of their median are the same time.
pub const TIME_SHARE: f64 = 0.15;
/// A loaded machine's scheduler moves a failure's time by this much whatever the
/// limit: replicates' times this close are the same time when their counts spread at
/// least twice as far (a random failure spreads both alike).
pub const TIME_JITTER_SECONDS: f64 = 0.015;
/// Failure times under this are the loop's start-up (its first buffers), not a limit
/// on time: replicates do not call one shorter a time limit.
pub const MIN_TIME_LIMIT_SECONDS: f64 = 0.01;
/// A paused run's failure within this share of the original's time held its time.
pub const TIME_HELD: f64 = 0.2;
/// Two runs' paces (buffers a second) this share apart went clearly apart: what a
/// run's own clock and start-up can blur stays under it.
pub const PACE_APART: f64 = 0.15;
/// A slope through fewer samples than this is not measurable: too few points before
/// the failure to tell growth from noise.
pub const MIN_COST_SAMPLES: usize = 5;

/// How far a count may move and still be the same failure, given the replicates'
/// spread: three times it, at least [`MIN_SLACK`] buffers.
pub fn noise_slack(spread: u64) -> u64 {
    (3 * spread).max(MIN_SLACK)
}
