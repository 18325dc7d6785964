//! The buffer manager (see issue 4). Not yet built.
