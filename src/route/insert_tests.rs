//! INSERT plans of each kind, made without a server.
