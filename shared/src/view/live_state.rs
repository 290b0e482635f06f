//! The page's side of the live protocol: its copy of the run, rebuilt from a snapshot and the
//! deltas that follow it in sequence; a gap or a new protocol version asks for a snapshot or
//! says why it cannot follow.

use crate::sweep::SweepFile;
use crate::view::protocol::{ServerMessage, PROTOCOL_VERSION};
use crate::view::run::{RunStatus, RunView};

/// The page's copy of the run, fed message by message.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveState {
    pub run: RunView,
    pub seq: Option<u64>,
    /// Set when the server speaks another protocol version.
    pub incompatible: Option<String>,
    /// This page saw a run in progress (it was watching, not visiting afterwards).
    pub seen_running: bool,
    /// The server said its command measured all it will.
    pub session_over: bool,
    /// The sweep the command is running: its points so far, or the whole table once done.
    pub sweep: Option<(bool, SweepFile)>,
}

/// What the client must do after a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applied {
    Updated,
    /// A delta did not follow the last sequence number: reconnect for a fresh snapshot.
    NeedSnapshot,
    Ignored,
}

impl Default for LiveState {
    fn default() -> Self {
        LiveState {
            run: RunView::idle(),
            seq: None,
            incompatible: None,
            seen_running: false,
            session_over: false,
            sweep: None,
        }
    }
}

impl LiveState {
    pub fn apply(&mut self, message: ServerMessage) -> Applied {
        match message {
            ServerMessage::Hello {
                protocol_version,
                speclens_version,
            } => {
                if protocol_version != PROTOCOL_VERSION {
                    self.incompatible = Some(format!(
                        "the collector (speclens {speclens_version}) speaks protocol {protocol_version}, this page speaks {PROTOCOL_VERSION}: reload the page"
                    ));
                }
                Applied::Ignored
            }
            ServerMessage::Snapshot { seq, run } | ServerMessage::Finished { seq, run } => {
                self.run = *run;
                self.seq = Some(seq);
                self.seen_running |= self.run.status == RunStatus::Running;
                Applied::Updated
            }
            ServerMessage::Delta { seq, delta } => match self.seq {
                Some(last) if seq == last + 1 => {
                    self.run.apply(*delta);
                    self.seq = Some(seq);
                    self.seen_running |= self.run.status == RunStatus::Running;
                    Applied::Updated
                }
                Some(last) if seq <= last => Applied::Ignored,
                _ => Applied::NeedSnapshot,
            },
            ServerMessage::SessionOver => {
                self.session_over = true;
                Applied::Updated
            }
            ServerMessage::Sweep { done, table } => {
                self.sweep = Some((done, *table));
                Applied::Updated
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::protocol::*;
    use crate::view::run::tests::point;
    use crate::view::run::*;

    #[test]
    fn snapshot_then_deltas_rebuild_the_run_and_gaps_ask_for_a_snapshot() {
        let mut server = RunView::idle();
        server.status = RunStatus::Running;
        let mut client = LiveState::default();
        assert_eq!(
            client.apply(ServerMessage::Snapshot {
                seq: 7,
                run: Box::new(server.clone())
            }),
            Applied::Updated
        );
        let before = server.clone();
        server.timeline.push(point(1.0));
        server.progress.completed = 3;
        let d = server.delta_since(&before);
        assert_eq!(d.timeline_append.len(), 1);
        assert_eq!(
            client.apply(ServerMessage::Delta {
                seq: 8,
                delta: Box::new(d.clone())
            }),
            Applied::Updated
        );
        assert_eq!(client.run, server);
        assert_eq!(
            client.apply(ServerMessage::Delta {
                seq: 8,
                delta: Box::new(d.clone())
            }),
            Applied::Ignored
        );
        assert_eq!(
            client.apply(ServerMessage::Delta {
                seq: 10,
                delta: Box::new(d)
            }),
            Applied::NeedSnapshot
        );
        assert_eq!(client.run, server, "a gap never corrupts the state");
    }
}
