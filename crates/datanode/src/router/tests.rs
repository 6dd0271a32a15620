use super::*;

fn ldm(instance: u16) -> BlockAddress {
    BlockAddress::new(NodeId(1), LDM_BLOCK, instance)
}
fn query(instance: u16) -> BlockAddress {
    BlockAddress::new(NodeId(1), QUERY_BLOCK, instance)
}
fn tc() -> BlockAddress {
    BlockAddress::new(NodeId(1), TC_BLOCK, 0)
}

#[test]
fn forced_policies_place_every_read_where_they_say() {
    let mut owner = ReadRouter::new(ReadPolicy::Owner, vec![query(0)]);
    owner.update([(ldm(0), 5)]);
    assert_eq!(owner.place_read(ldm(0), tc()), ReadPlace::Executor(ldm(0)));

    let mut queries = ReadRouter::new(ReadPolicy::Query, vec![query(0), query(1)]);
    let placed: Vec<_> = (0..4).map(|_| queries.place_read(ldm(0), tc())).collect();
    assert_eq!(
        placed,
        [query(0), query(1), query(0), query(1)].map(ReadPlace::Executor)
    );

    let mut receiver = ReadRouter::new(ReadPolicy::Receiver, vec![query(0)]);
    assert_eq!(receiver.place_read(ldm(0), tc()), ReadPlace::Here);
    assert_eq!(
        receiver.place_scan(ldm(0), tc()),
        ldm(0),
        "scans never run in the coordinator"
    );
}

#[test]
fn query_policy_without_query_instances_falls_back_to_the_owner() {
    let mut router = ReadRouter::new(ReadPolicy::Query, Vec::new());
    assert_eq!(router.place_read(ldm(1), tc()), ReadPlace::Executor(ldm(1)));
    assert_eq!(router.place_scan(ldm(1), tc()), ldm(1));
}

#[test]
fn adaptive_keeps_reads_on_a_lightly_loaded_owner() {
    let mut router = ReadRouter::new(ReadPolicy::Adaptive, vec![query(0)]);
    router.update([(ldm(0), 2), (query(0), 1), (tc(), 1)]);
    assert_eq!(router.place_read(ldm(0), tc()), ReadPlace::Executor(ldm(0)));
}

#[test]
fn adaptive_moves_reads_off_a_busy_owner_to_the_least_loaded_place() {
    let mut router = ReadRouter::new(ReadPolicy::Adaptive, vec![query(0), query(1)]);
    router.update([(ldm(0), 4), (query(0), 3), (query(1), 2), (tc(), 4)]);
    assert_eq!(
        router.place_read(ldm(0), tc()),
        ReadPlace::Executor(query(1))
    );

    router.update([(query(0), 5), (query(1), 5), (tc(), 1)]);
    assert_eq!(router.place_read(ldm(0), tc()), ReadPlace::Here);
    assert_eq!(
        router.place_scan(ldm(0), tc()),
        ldm(0),
        "a scan stays on the owner when no query instance is less loaded"
    );
}

#[test]
fn adaptive_keeps_reads_on_the_owner_when_nothing_is_less_loaded() {
    let mut router = ReadRouter::new(ReadPolicy::Adaptive, vec![query(0)]);
    router.update([(ldm(0), 4), (query(0), 4), (tc(), 5)]);
    assert_eq!(router.place_read(ldm(0), tc()), ReadPlace::Executor(ldm(0)));
}

#[test]
fn adaptive_spreads_reads_over_equally_loaded_query_instances() {
    let mut router = ReadRouter::new(ReadPolicy::Adaptive, vec![query(0), query(1)]);
    router.update([(ldm(0), 5), (query(0), 1), (query(1), 1), (tc(), 5)]);
    let placed: Vec<_> = (0..4).map(|_| router.place_read(ldm(0), tc())).collect();
    assert_eq!(
        placed,
        [query(0), query(1), query(0), query(1)].map(ReadPlace::Executor)
    );
}

#[test]
fn load_levels_rise_with_cpu_use_and_queue_depth() {
    assert_eq!(load_level(0, 0), 1);
    assert_eq!(load_level(29, 0), 1);
    assert_eq!(load_level(30, 0), 2);
    assert_eq!(load_level(69, 0), 3);
    assert_eq!(load_level(84, 0), 4);
    assert_eq!(load_level(100, 0), 5);
    assert_eq!(load_level(0, QUEUE_DEPTH_OVERLOADED), 5);
}

#[test]
fn policies_parse_from_their_names() {
    assert_eq!("ldm".parse(), Ok(ReadPolicy::Owner));
    assert_eq!("query".parse(), Ok(ReadPolicy::Query));
    assert_eq!("receiver".parse(), Ok(ReadPolicy::Receiver));
    assert_eq!("adaptive".parse(), Ok(ReadPolicy::Adaptive));
    assert!("fastest".parse::<ReadPolicy>().is_err());
}

#[test]
fn a_partition_of_another_node_is_read_by_its_owner_whatever_the_policy() {
    let remote = BlockAddress::new(NodeId(2), LDM_BLOCK, 0);
    for policy in [
        ReadPolicy::Owner,
        ReadPolicy::Query,
        ReadPolicy::Receiver,
        ReadPolicy::Adaptive,
    ] {
        let mut router = ReadRouter::new(policy, vec![query(0)]);
        router.update([(remote, 5), (query(0), 1), (tc(), 1)]);
        assert_eq!(router.place_read(remote, tc()), ReadPlace::Executor(remote));
        assert_eq!(router.place_scan(remote, tc()), remote);
    }
}
