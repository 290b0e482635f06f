//! The results folder, one owner for it: reading what runs, sweeps and accept folders it holds
//! (`history`), and writing into it (`write`: default names, the lock, atomic writes).

pub mod history;
pub mod write;
