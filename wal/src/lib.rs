//! The persistent-memory log (see issue 3). Not yet built.
