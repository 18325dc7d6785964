//! Named failpoints (feature `failpoints`, for tests only): a test arms a point by name and the
//! engine panics the next time it passes it, so that what an unwinding panic leaves behind can be
//! tested where no real trigger is known. Without the feature every point compiles to nothing.

#[cfg(feature = "failpoints")]
static ARMED: parking_lot::Mutex<Vec<&'static str>> = parking_lot::Mutex::new(Vec::new());

/// Arms point `name`: the next pass through it panics (once).
#[cfg(feature = "failpoints")]
pub fn arm(name: &'static str) {
    ARMED.lock().push(name);
}

/// Passes point `name`: panics if a test armed it.
#[inline]
pub(crate) fn hit(name: &'static str) {
    #[cfg(feature = "failpoints")]
    {
        let mut armed = ARMED.lock();
        if let Some(i) = armed.iter().position(|&n| n == name) {
            armed.swap_remove(i);
            drop(armed);
            panic!("failpoint {name}");
        }
    }
    #[cfg(not(feature = "failpoints"))]
    let _ = name;
}
