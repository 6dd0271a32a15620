//! Parser for NDB's `ThreadConfig` syntax:
//! `kind={count=N,cpubind=LIST,cpuset=LIST,spintime=US,realtime=0|1,thread_prio=N},...`.
//!
//! Commas separate entries, keys and list items alike, so inside a CPU list a comma followed
//! by a number continues the list and a comma followed by a word starts the next key.

use super::config::{
    count_range, CpuBinding, ThreadConfig, ThreadEntry, SPINTIME_US_MAX, THREAD_PRIO_MAX,
};
use super::cpu_list::{CpuList, CPU_ID_MAX};
use crate::module::Module;

/// What is wrong with a thread configuration string, and where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid thread configuration at column {column} (near `{near}`): {problem}")]
pub struct ThreadConfigError {
    /// 1-based character column of the offending token.
    pub column: usize,
    pub near: String,
    pub problem: String,
}

const KINDS: &str = "ldm, query, tc, recv, send, main, rep, io";
const KEYS: &str = "count, cpubind, cpuset, spintime, realtime, thread_prio";

impl std::str::FromStr for ThreadConfig {
    type Err = ThreadConfigError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Parser::new(text)?.config()
    }
}

#[derive(Clone, Debug, PartialEq)]
enum Token {
    Word(String),
    Number(u64),
    Symbol(char),
}

struct Lexeme {
    token: Token,
    column: usize,
    text: String,
}

fn tokenize(text: &str) -> Result<Vec<Lexeme>, ThreadConfigError> {
    let chars: Vec<char> = text.chars().collect();
    let mut lexemes = Vec::new();
    let mut index = 0;
    while index < chars.len() {
        let column = index + 1;
        let c = chars[index];
        if c.is_whitespace() {
            index += 1;
        } else if matches!(c, '{' | '}' | ',' | '=' | '-') {
            lexemes.push(Lexeme {
                token: Token::Symbol(c),
                column,
                text: c.to_string(),
            });
            index += 1;
        } else if c.is_ascii_alphanumeric() || c == '_' {
            let start = index;
            while index < chars.len()
                && (chars[index].is_ascii_alphanumeric() || chars[index] == '_')
            {
                index += 1;
            }
            let text: String = chars[start..index].iter().collect();
            let token = if c.is_ascii_digit() {
                let number = text.parse().map_err(|_| ThreadConfigError {
                    column,
                    near: text.clone(),
                    problem: "expected a number (digits only, at most 20 of them)".into(),
                })?;
                Token::Number(number)
            } else {
                Token::Word(text.to_ascii_lowercase())
            };
            lexemes.push(Lexeme {
                token,
                column,
                text,
            });
        } else {
            return Err(ThreadConfigError {
                column,
                near: c.to_string(),
                problem: "unexpected character; expected kind={key=value,...} entries".into(),
            });
        }
    }
    Ok(lexemes)
}

struct Parser {
    lexemes: Vec<Lexeme>,
    position: usize,
    end_column: usize,
}

/// One entry as written, before defaults are applied.
#[derive(Default)]
struct EntryKeys {
    count: Option<u16>,
    binding: Option<CpuBinding>,
    spintime_us: Option<u32>,
    realtime: Option<bool>,
    thread_prio: Option<u8>,
}

impl Parser {
    fn new(text: &str) -> Result<Self, ThreadConfigError> {
        Ok(Self {
            lexemes: tokenize(text)?,
            position: 0,
            end_column: text.chars().count() + 1,
        })
    }

    fn config(mut self) -> Result<ThreadConfig, ThreadConfigError> {
        if self.lexemes.is_empty() {
            return Err(
                self.error("empty thread configuration; expected entries like ldm={count=2}")
            );
        }
        let mut config = ThreadConfig::default();
        let mut given = [false; Module::ALL.len()];
        loop {
            let entry_start = self.position;
            let (module, entry) = self.entry()?;
            if given[module.index()] {
                self.position = entry_start;
                return Err(self.error(&format!(
                    "`{module}` is configured twice; give each kind once, with count=N"
                )));
            }
            given[module.index()] = true;
            *config.entry_mut(module) = entry;
            check_bound_cpus_are_distinct(&config).map_err(|problem| {
                self.position = entry_start;
                self.error(&problem)
            })?;
            match self.next_symbol() {
                None => return Ok(config),
                Some(',') => {}
                Some(_) => {
                    self.position -= 1;
                    return Err(self.error("expected `,` between entries"));
                }
            }
        }
    }

    fn entry(&mut self) -> Result<(Module, ThreadEntry), ThreadConfigError> {
        let module = match self.peek() {
            Some(Token::Word(word)) => Module::from_name(word).ok_or_else(|| {
                self.error(&format!("unknown thread kind; expected one of {KINDS}"))
            })?,
            _ => return Err(self.error(&format!("expected a thread kind ({KINDS})"))),
        };
        self.position += 1;
        self.expect('=', &format!("expected `=` after `{module}`"))?;
        self.expect('{', &format!("expected `{{` after `{module}=`"))?;
        let mut keys = EntryKeys::default();
        if self.peek() == Some(&Token::Symbol('}')) {
            self.position += 1;
        } else {
            loop {
                self.key(module, &mut keys)?;
                match self.next_symbol() {
                    Some('}') => break,
                    Some(',') => {}
                    None => return Err(self.error(&format!("missing `}}` to close `{module}={{`"))),
                    Some(_) => {
                        self.position -= 1;
                        return Err(self.error("expected `,` or `}`"));
                    }
                }
            }
        }
        self.position -= 1; // Report entry-level problems at its closing brace.
        let entry = self.finish_entry(module, keys)?;
        self.position += 1;
        Ok((module, entry))
    }

    fn key(&mut self, module: Module, keys: &mut EntryKeys) -> Result<(), ThreadConfigError> {
        let key = match self.peek() {
            Some(Token::Word(word)) => word.clone(),
            _ => return Err(self.error(&format!("expected a key ({KEYS})"))),
        };
        let duplicate = || format!("`{key}` is given twice in `{module}`");
        self.position += 1;
        self.expect('=', &format!("expected `=` after `{key}`"))?;
        match key.as_str() {
            "count" => {
                let (min, max) = count_range(module);
                let count =
                    self.number_in(u64::from(min), u64::from(max), &format!("{module} count"))?;
                replace(&mut keys.count, count as u16).map_err(|_| self.error_before(&duplicate()))
            }
            "cpubind" | "cpuset" => {
                let list = self.cpu_list(&key)?;
                let binding = if key == "cpubind" {
                    CpuBinding::Bind(list)
                } else {
                    CpuBinding::Set(list)
                };
                replace(&mut keys.binding, binding)
                    .map_err(|_| self.error_before("give either cpubind or cpuset, once"))
            }
            "spintime" => {
                let us =
                    self.number_in(0, u64::from(SPINTIME_US_MAX), "spintime (microseconds)")?;
                replace(&mut keys.spintime_us, us as u32)
                    .map_err(|_| self.error_before(&duplicate()))
            }
            "realtime" => {
                let flag = self.number_in(0, 1, "realtime")?;
                replace(&mut keys.realtime, flag == 1).map_err(|_| self.error_before(&duplicate()))
            }
            "thread_prio" => {
                let prio = self.number_in(0, u64::from(THREAD_PRIO_MAX), "thread_prio")?;
                replace(&mut keys.thread_prio, prio as u8)
                    .map_err(|_| self.error_before(&duplicate()))
            }
            _ => {
                self.position -= 2;
                Err(self.error(&format!("unknown key; expected one of {KEYS}")))
            }
        }
    }

    fn finish_entry(
        &self,
        module: Module,
        keys: EntryKeys,
    ) -> Result<ThreadEntry, ThreadConfigError> {
        let binding = keys.binding.unwrap_or_default();
        let count = match (keys.count, &binding) {
            (Some(count), _) => count,
            (None, CpuBinding::Bind(list)) => u16::try_from(list.len()).unwrap_or(u16::MAX),
            (None, _) => 1,
        };
        let (min, max) = count_range(module);
        if count < min || count > max {
            return Err(self.error(&format!(
                "{module} needs a count between {min} and {max}, got {count}"
            )));
        }
        if let CpuBinding::Bind(list) = &binding {
            if count > 0 && list.len() != usize::from(count) {
                return Err(self.error(&format!(
                    "cpubind lists {} CPUs for {count} {module} threads; give exactly one CPU per thread",
                    list.len()
                )));
            }
        }
        Ok(ThreadEntry {
            count,
            binding,
            spintime_us: keys.spintime_us.unwrap_or(0),
            realtime: keys.realtime.unwrap_or(false),
            thread_prio: keys.thread_prio,
        })
    }

    fn cpu_list(&mut self, key: &str) -> Result<CpuList, ThreadConfigError> {
        let start_position = self.position;
        let mut cpus = Vec::new();
        loop {
            let first = self.cpu(key)?;
            if self.peek() == Some(&Token::Symbol('-')) {
                self.position += 1;
                let last = self.cpu(key)?;
                if last < first {
                    self.position -= 1;
                    return Err(self.error(&format!("CPU range {first}-{last} runs backwards")));
                }
                cpus.extend(first..=last);
            } else {
                cpus.push(first);
            }
            let continues = self.peek() == Some(&Token::Symbol(','))
                && matches!(self.peek_at(1), Some(Token::Number(_)));
            if !continues {
                break;
            }
            self.position += 1;
        }
        let list = CpuList::new(cpus);
        if let Some(cpu) = list.first_duplicate() {
            self.position = start_position;
            return Err(self.error(&format!("CPU {cpu} is listed twice in {key}")));
        }
        Ok(list)
    }

    fn cpu(&mut self, key: &str) -> Result<u16, ThreadConfigError> {
        match self.peek() {
            Some(Token::Number(_)) => self
                .number_in(0, u64::from(CPU_ID_MAX), "a CPU number")
                .map(|n| n as u16),
            _ => Err(self.error(&format!(
                "expected a CPU list for {key}, like 0-3,8 (the list may not be empty)"
            ))),
        }
    }

    fn number_in(&mut self, min: u64, max: u64, what: &str) -> Result<u64, ThreadConfigError> {
        match self.peek() {
            Some(&Token::Number(n)) if (min..=max).contains(&n) => {
                self.position += 1;
                Ok(n)
            }
            Some(Token::Number(n)) => {
                Err(self.error(&format!("{what} must be between {min} and {max}, got {n}")))
            }
            _ => Err(self.error(&format!("expected a number for {what}"))),
        }
    }

    fn expect(&mut self, symbol: char, problem: &str) -> Result<(), ThreadConfigError> {
        if self.peek() == Some(&Token::Symbol(symbol)) {
            self.position += 1;
            Ok(())
        } else {
            Err(self.error(problem))
        }
    }

    fn next_symbol(&mut self) -> Option<char> {
        let lexeme = self.lexemes.get(self.position)?;
        self.position += 1;
        match lexeme.token {
            Token::Symbol(c) => Some(c),
            _ => Some('\0'),
        }
    }

    fn peek(&self) -> Option<&Token> {
        self.peek_at(0)
    }

    fn peek_at(&self, offset: usize) -> Option<&Token> {
        self.lexemes.get(self.position + offset).map(|l| &l.token)
    }

    fn error(&self, problem: &str) -> ThreadConfigError {
        self.error_at(self.position, problem)
    }

    /// An error about the value just consumed.
    fn error_before(&self, problem: &str) -> ThreadConfigError {
        self.error_at(self.position.saturating_sub(1), problem)
    }

    fn error_at(&self, position: usize, problem: &str) -> ThreadConfigError {
        let (column, near) = match self.lexemes.get(position) {
            Some(lexeme) => (lexeme.column, lexeme.text.clone()),
            None => (self.end_column, "end of input".to_string()),
        };
        ThreadConfigError {
            column,
            near,
            problem: problem.to_string(),
        }
    }
}

/// Stores `value` in an empty slot; a full slot means the key was given twice.
fn replace<T>(slot: &mut Option<T>, value: T) -> Result<(), ()> {
    if slot.is_some() {
        return Err(());
    }
    *slot = Some(value);
    Ok(())
}

/// Two execution threads pinned to one CPU would fight for it, so `cpubind` CPUs must differ
/// across entries that start threads. `io` is exempt: it sleeps on file I/O most of the time,
/// and NDB configurations (including both of seed 000) pin it beside a receive thread.
fn check_bound_cpus_are_distinct(config: &ThreadConfig) -> Result<(), String> {
    let mut owner: Vec<Option<Module>> = vec![None; usize::from(CPU_ID_MAX) + 1];
    for module in Module::ALL {
        let entry = config.entry(module);
        if module == Module::Io || entry.count == 0 {
            continue;
        }
        if let CpuBinding::Bind(list) = &entry.binding {
            for &cpu in list.cpus() {
                if let Some(other) = owner[usize::from(cpu)].replace(module) {
                    return Err(format!(
                        "CPU {cpu} is bound to both a {other} and a {module} thread; \
                         cpubind CPUs must differ between threads (only io may share)"
                    ));
                }
            }
        }
    }
    Ok(())
}
