use super::*;
use crate::cluster::NodeSet;

/// Node `node`'s report of a disk that restores GCI 40 of life 2, with a dictionary
/// (`next_table_id` 9) or none (0), sound or suspect.
fn report(node: u32, next_table_id: u32, suspect: bool) -> StartReport {
    StartReport {
        node,
        node_life: 3,
        cluster_life: 2,
        restorable_gci: 40,
        holds_data: 1,
        restores_from_gci: 0,
        next_table_id,
        schema_suspect: u32::from(suspect),
    }
}

fn decision(gci: u64, participants: &[u8]) -> Decision {
    Decision {
        cluster_life: 3,
        gci,
        participants: NodeSet::of(participants.iter().map(|&id| NodeId(id))),
        stale: Vec::new(),
        next_table_id: 9,
        dictionary_from: None,
    }
}

const MASTER: NodeId = NodeId(1);

#[test]
fn a_sound_master_ships_its_own_dictionary() {
    let reports = [report(1, 9, false), report(2, 9, true)];
    let source = dictionary_source(&reports, &decision(40, &[1, 2]), MASTER);
    assert_eq!(source, Ok(None));
}

#[test]
fn a_suspect_master_takes_the_first_sound_participants_dictionary() {
    let reports = [
        report(1, 9, true),
        report(2, 9, true),
        report(3, 9, false),
        report(4, 9, false),
    ];
    let source = dictionary_source(&reports, &decision(40, &[1, 2, 3, 4]), MASTER);
    assert_eq!(source, Ok(Some(NodeId(3))));
    // A master without any schema file on a disk with data is suspect too.
    let reports = [report(1, 0, true), report(2, 9, false)];
    let source = dictionary_source(&reports, &decision(40, &[1, 2]), MASTER);
    assert_eq!(source, Ok(Some(NodeId(2))));
}

#[test]
fn a_node_that_does_not_take_part_is_no_source() {
    // Node 2's disk is behind: it stops, and its dictionary may be older still.
    let reports = [report(1, 9, true), report(2, 9, false), report(3, 9, false)];
    let source = dictionary_source(&reports, &decision(40, &[1, 3]), MASTER);
    assert_eq!(source, Ok(Some(NodeId(3))));
}

#[test]
fn with_every_dictionary_suspect_the_first_that_exists_serves() {
    let reports = [report(1, 0, true), report(2, 9, true)];
    let source = dictionary_source(&reports, &decision(40, &[1, 2]), MASTER);
    assert_eq!(source, Ok(Some(NodeId(2))));
    let reports = [report(1, 9, true), report(2, 9, true)];
    let source = dictionary_source(&reports, &decision(40, &[1, 2]), MASTER);
    assert_eq!(source, Ok(None));
}

#[test]
fn a_start_whose_participants_have_no_dictionary_is_refused() {
    let reports = [report(1, 0, true), report(2, 0, true)];
    let refused = dictionary_source(&reports, &decision(40, &[1, 2]), MASTER).unwrap_err();
    assert!(refused.contains("no data node taking part"), "{refused}");
}

#[test]
fn a_start_that_restores_no_rows_still_takes_a_sound_dictionary() {
    // No GCI was restorable yet, but the table's creation was acknowledged.
    let reports = [report(1, 0, true), report(2, 9, false)];
    let source = dictionary_source(&reports, &decision(0, &[1, 2]), MASTER);
    assert_eq!(source, Ok(Some(NodeId(2))));
}

#[test]
fn a_first_start_or_a_master_that_stops_needs_no_source() {
    let fresh = [report(1, 0, false), report(2, 0, false)];
    let source = dictionary_source(&fresh, &decision(0, &[1, 2]), MASTER);
    assert_eq!(source, Ok(None));
    let reports = [report(1, 0, true), report(2, 9, false)];
    let source = dictionary_source(&reports, &decision(40, &[2]), MASTER);
    assert_eq!(source, Ok(None));
}

#[test]
fn a_cluster_that_never_had_a_table_starts_but_refused_files_and_none_left_stop_it() {
    let missing = |node| StartReport {
        schema_suspect: SCHEMA_MISSING,
        ..report(node, 0, false)
    };
    // No node has a schema file and none was refused: no table was ever created.
    let none_anywhere = [missing(1), missing(2)];
    let source = dictionary_source(&none_anywhere, &decision(40, &[1, 2]), MASTER);
    assert_eq!(source, Ok(None));
    // One refused: the tables it held cannot be known.
    let one_refused = [missing(1), report(2, 0, true)];
    let refused = dictionary_source(&one_refused, &decision(40, &[1, 2]), MASTER);
    assert!(refused.is_err(), "{refused:?}");
}
