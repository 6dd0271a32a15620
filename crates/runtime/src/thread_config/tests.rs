//! Specification of the thread configuration language and the layouts it produces.

use proptest::prelude::*;

use super::*;
use crate::module::Module;

/// The "LDM setup" of seed 000: separate ldm and query threads, tc inside the recv threads.
const SEED_LDM_SETUP: &str = "ldm={count=1,cpubind=0},query={count=1,cpubind=1},tc={count=0,cpubind=2},recv={count=2,cpubind=32,33},send={count=0,cpubind=35},main={count=0,cpubind=36},io={count=1,cpubind=33}";

/// The "Receive setup" of seed 000: four recv threads that run everything.
const SEED_RECEIVE_SETUP: &str = "ldm={count=0,cpubind=0},query={count=0,cpubind=3},tc={count=0,cpubind=2},recv={count=4,cpubind=0,1,32,33},send={count=0,cpubind=35},main={count=0,cpubind=36},io={count=1,cpubind=33}";

fn layout_of(text: &str) -> String {
    let config: ThreadConfig = text.parse().unwrap_or_else(|e| panic!("{text}: {e}"));
    ThreadLayout::from_config(&config).to_string()
}

fn error_of(text: &str) -> ThreadConfigError {
    match text.parse::<ThreadConfig>() {
        Ok(config) => panic!("`{text}` was accepted as {config}"),
        Err(error) => error,
    }
}

#[test]
fn ldm_setup_of_seed_000_pipelines_ldm_and_query_behind_two_receive_threads() {
    assert_eq!(
        layout_of(SEED_LDM_SETUP),
        "thread 0 ldm modules=ldm.0 cpus=0\n\
         thread 1 query modules=query.0 cpus=1\n\
         thread 2 recv modules=recv.0,tc.0,main.0,rep.0 cpus=32\n\
         thread 3 recv modules=recv.1,tc.1 cpus=33\n\
         thread 4 io modules=io.0 cpus=33\n"
    );
}

#[test]
fn receive_setup_of_seed_000_runs_everything_in_each_receive_thread() {
    assert_eq!(
        layout_of(SEED_RECEIVE_SETUP),
        "thread 0 recv modules=recv.0,ldm.0,query.0,tc.0,main.0,rep.0 cpus=0\n\
         thread 1 recv modules=recv.1,ldm.1,query.1,tc.1 cpus=1\n\
         thread 2 recv modules=recv.2,ldm.2,query.2,tc.2 cpus=32\n\
         thread 3 recv modules=recv.3,ldm.3,query.3,tc.3 cpus=33\n\
         thread 4 io modules=io.0 cpus=33\n"
    );
}

#[test]
fn kinds_left_out_get_one_recv_and_one_io_thread() {
    assert_eq!(
        layout_of("ldm={count=2}"),
        "thread 0 ldm modules=ldm.0,query.0 cpus=any\n\
         thread 1 ldm modules=ldm.1,query.1 cpus=any\n\
         thread 2 recv modules=recv.0,tc.0,main.0,rep.0 cpus=any\n\
         thread 3 io modules=io.0 cpus=any\n"
    );
}

#[test]
fn cpuset_lets_every_thread_of_the_entry_float_over_the_set() {
    assert_eq!(
        layout_of("ldm={count=2,cpuset=8-27,40-59},recv={count=1},io={count=0}"),
        "thread 0 ldm modules=ldm.0,query.0 cpus=8-27,40-59\n\
         thread 1 ldm modules=ldm.1,query.1 cpus=8-27,40-59\n\
         thread 2 recv modules=recv.0,tc.0,main.0,rep.0,io.0 cpus=any\n"
    );
}

#[test]
fn count_defaults_to_the_length_of_cpubind_and_options_are_kept() {
    let config: ThreadConfig = "LDM={cpubind=4,5,spintime=50,realtime=1,thread_prio=7}"
        .parse()
        .unwrap();
    let ldm = config.entry(Module::Ldm);
    assert_eq!(ldm.count, 2);
    assert_eq!(ldm.spintime_us, 50);
    assert!(ldm.realtime);
    assert_eq!(ldm.thread_prio, Some(7));
    assert_eq!(
        config.to_string(),
        "ldm={count=2,cpubind=4-5,spintime=50,realtime=1,thread_prio=7},query={count=0},\
         tc={count=0},recv={count=1},send={count=0},main={count=0},rep={count=0},io={count=1}"
    );
}

#[test]
fn whitespace_between_tokens_is_allowed() {
    assert_eq!(
        " ldm = { count = 1 } , recv={ count=1 }".parse::<ThreadConfig>(),
        "ldm={count=1},recv={count=1}".parse::<ThreadConfig>()
    );
}

#[test]
fn automatic_configurations_use_every_cpu_and_give_most_to_ldm() {
    for cpus in 1..=AUTO_CPUS_MAX {
        let config = automatic_config(cpus).unwrap();
        let io = usize::from(config.count(Module::Io));
        assert_eq!(config.thread_count() - io, cpus as usize, "{cpus} CPUs");
        if cpus >= 2 {
            assert!(
                u32::from(config.count(Module::Ldm)) * 5 >= cpus * 2,
                "{cpus} CPUs"
            );
        }
        // The canonical string of an automatic configuration is itself valid.
        assert_eq!(config.to_string().parse::<ThreadConfig>(), Ok(config));
    }
    assert_eq!(automatic_config(0), Err(AutoConfigError(0)));
    assert!(automatic_config(AUTO_CPUS_MAX + 1).is_err());
}

#[test]
fn automatic_layouts_for_common_machine_sizes() {
    let layout = |cpus| ThreadLayout::from_config(&automatic_config(cpus).unwrap()).to_string();
    assert_eq!(
        layout(1),
        "thread 0 recv modules=recv.0,ldm.0,query.0,tc.0,main.0,rep.0 cpus=any\n\
         thread 1 io modules=io.0 cpus=any\n"
    );
    assert_eq!(
        layout(2),
        "thread 0 ldm modules=ldm.0,query.0 cpus=any\n\
         thread 1 recv modules=recv.0,tc.0,main.0,rep.0 cpus=any\n\
         thread 2 io modules=io.0 cpus=any\n"
    );
    assert_eq!(
        layout(4),
        "thread 0 ldm modules=ldm.0,query.0 cpus=any\n\
         thread 1 ldm modules=ldm.1,query.1 cpus=any\n\
         thread 2 tc modules=tc.0 cpus=any\n\
         thread 3 recv modules=recv.0,main.0,rep.0 cpus=any\n\
         thread 4 io modules=io.0 cpus=any\n"
    );
    let counts = |cpus| {
        let config = automatic_config(cpus).unwrap();
        Module::ALL.map(|m| config.count(m))
    };
    // ldm, query, tc, recv, send, main, rep, io
    assert_eq!(counts(8), [4, 0, 2, 1, 1, 0, 0, 1]);
    assert_eq!(counts(16), [8, 0, 4, 2, 1, 1, 0, 1]);
    assert_eq!(counts(32), [16, 0, 8, 4, 2, 1, 1, 1]);
    assert_eq!(counts(64), [33, 0, 16, 8, 5, 1, 1, 1]);
    assert_eq!(counts(128), [68, 0, 32, 16, 10, 1, 1, 1]);
}

#[test]
fn every_layout_runs_each_block_module_at_least_once() {
    let mut texts = vec![SEED_LDM_SETUP.to_string(), SEED_RECEIVE_SETUP.to_string()];
    texts.extend((1..=64).map(|cpus| automatic_config(cpus).unwrap().to_string()));
    for text in texts {
        let layout = ThreadLayout::from_config(&text.parse().unwrap());
        for module in [
            Module::Ldm,
            Module::Query,
            Module::Tc,
            Module::Recv,
            Module::Main,
        ] {
            assert!(
                layout.instances_of(module) >= 1,
                "{module} missing in {text}"
            );
        }
        for module in [Module::Main, Module::Rep, Module::Io] {
            assert_eq!(layout.instances_of(module), 1, "{module} in {text}");
        }
    }
}

#[test]
fn malformed_strings_name_the_offending_token() {
    let cases = [
        ("ldx={count=1}", "ldx", "unknown thread kind"),
        ("ldm={count=x}", "x", "expected a number for ldm count"),
        ("ldm={count=2x}", "2x", "expected a number"),
        ("ldm={count=1", "end of input", "missing `}`"),
        ("ldm={count=1}}", "}", "expected `,` between entries"),
        ("ldm=count=1}", "count", "expected `{`"),
        ("ldm={cpubind=}", "}", "the list may not be empty"),
        ("ldm={count=1,cpubind=,}", ",", "the list may not be empty"),
        ("ldm={count=2,cpubind=3,3}", "3", "CPU 3 is listed twice"),
        (
            "ldm={count=1,cpubind=1},recv={count=1,cpubind=1}",
            "recv",
            "CPU 1 is bound to both",
        ),
        ("ldm={count=1,colour=blue}", "colour", "unknown key"),
        ("ldm={count=400}", "400", "between 0 and 332"),
        ("recv={count=0}", "0", "between 1 and 80"),
        (
            "ldm={count=2,cpubind=1}",
            "}",
            "cpubind lists 1 CPUs for 2 ldm threads",
        ),
        ("ldm={count=1},ldm={count=2}", "ldm", "configured twice"),
        ("ldm={count=1,count=1}", "1", "given twice"),
        ("ldm={cpubind=1,cpuset=2}", "2", "either cpubind or cpuset"),
        ("ldm={cpubind=5-3}", "3", "runs backwards"),
        ("ldm={cpubind=1024}", "1024", "between 0 and 1023"),
        ("ldm={spintime=9001}", "9001", "between 0 and 9000"),
        ("ldm={realtime=2}", "2", "between 0 and 1"),
        ("ldm={thread_prio=11}", "11", "between 0 and 10"),
        ("ldm={count=1};", ";", "unexpected character"),
        ("", "end of input", "empty thread configuration"),
        ("=", "=", "expected a thread kind"),
    ];
    for (text, near, problem) in cases {
        let error = error_of(text);
        assert_eq!(error.near, near, "`{text}`: {error}");
        assert!(error.problem.contains(problem), "`{text}`: {error}");
        assert!(error.to_string().contains(&format!("`{near}`")), "{error}");
    }
}

#[test]
fn io_may_share_a_cpu_with_a_receive_thread_and_count_zero_bindings_are_ignored() {
    let config: ThreadConfig =
        "recv={count=1,cpubind=3},io={count=1,cpubind=3},ldm={count=0,cpubind=3}"
            .parse()
            .unwrap();
    let layout = ThreadLayout::from_config(&config);
    assert_eq!(layout.threads.len(), 2);
}

prop_compose! {
    fn an_entry(module: Module)(
        count in 0..=count_range(module).1.min(6),
        binding_kind in 0..3u8,
        shift in 0..6u16,
        spintime_us in prop_oneof![Just(0u32), 0..=SPINTIME_US_MAX],
        realtime: bool,
        thread_prio in proptest::option::of(0..=THREAD_PRIO_MAX),
    ) -> ThreadEntry {
        let count = count.max(count_range(module).0);
        // Each kind binds within its own block of CPUs, so generated bindings never collide.
        let base = module.index() as u16 * 16;
        let mut cpus: Vec<u16> = (base..base + count.max(1)).collect();
        let len = cpus.len();
        cpus.rotate_left(usize::from(shift) % len);
        let binding = match binding_kind {
            0 => CpuBinding::Any,
            1 if count > 0 => CpuBinding::Bind(CpuList::new(cpus)),
            _ => CpuBinding::Set(CpuList::new(cpus)),
        };
        ThreadEntry { count, binding, spintime_us, realtime, thread_prio }
    }
}

fn a_config() -> impl Strategy<Value = ThreadConfig> {
    let entries: Vec<_> = Module::ALL.iter().map(|&m| an_entry(m)).collect();
    entries.prop_map(|entries| {
        let mut config = ThreadConfig::default();
        for (module, entry) in Module::ALL.into_iter().zip(entries) {
            *config.entry_mut(module) = entry;
        }
        config
    })
}

proptest! {
    #[test]
    fn printing_and_parsing_a_config_gives_the_same_layout(config in a_config()) {
        let printed = config.to_string();
        let reparsed: ThreadConfig = printed.parse().map_err(|e| TestCaseError::fail(format!("{printed}: {e}")))?;
        prop_assert_eq!(&reparsed, &config);
        prop_assert_eq!(ThreadLayout::from_config(&reparsed), ThreadLayout::from_config(&config));
    }

    #[test]
    fn parsing_arbitrary_text_never_panics(text in "[a-z{}=,0-9 _-]{0,60}") {
        let _ = text.parse::<ThreadConfig>();
    }
}
