//! `kista mgm`: the management client. With `-e COMMAND` it runs one command and exits
//! (status 1 when the management server refuses it); without, it reads commands from
//! standard input until `quit` or end of input.

use std::io::{BufRead, Write};
use std::time::Duration;

use clap::Args;
use kista_mgm::admin::{AdminClient, AdminError};
use kista_mgm::command::Command;

use crate::key_file::KeyFileArg;
use crate::Failure;

#[derive(Args, Debug)]
pub struct MgmArgs {
    /// The management server, as HOST:PORT.
    #[arg(long, default_value = "127.0.0.1:1186", value_name = "HOST:PORT")]
    mgm: String,

    #[command(flatten)]
    key: KeyFileArg,

    /// Run this command and exit (e.g. "show", "2 stop"; "help" lists them).
    #[arg(long, short = 'e', value_name = "COMMAND")]
    execute: Option<String>,
}

/// Longest the client waits for the management server to connect or answer.
const TIMEOUT: Duration = Duration::from_secs(10);

pub fn run(args: &MgmArgs) -> Result<(), Failure> {
    let mut client = AdminClient::connect(&args.mgm, args.key.load()?.as_ref(), TIMEOUT)
        .map_err(Failure::runtime)?;
    if let Some(command) = &args.execute {
        let text = request(&mut client, command).map_err(Failure::runtime)?;
        println!("{}", text.trim_end());
        return Ok(());
    }
    let stdin = std::io::stdin();
    let mut line = String::new();
    loop {
        print!("kista> ");
        let _ = std::io::stdout().flush();
        line.clear();
        if stdin.lock().read_line(&mut line).unwrap_or(0) == 0 {
            println!();
            return Ok(());
        }
        let command = line.trim();
        match command {
            "" => continue,
            "quit" | "exit" => return Ok(()),
            _ => {}
        }
        match request(&mut client, command) {
            Ok(text) => println!("{}", text.trim_end()),
            Err(AdminError::Refused(reason)) => println!("error: {}", reason.trim_end()),
            Err(other) => return Err(Failure::runtime(other)),
        }
    }
}

/// Sends `command`, waiting for its answer without a time limit if it answers slowly
/// (`start backup`: the server's wait is bounded by the data node's connection).
fn request(client: &mut AdminClient, command: &str) -> Result<String, AdminError> {
    let slow = command.parse::<Command>().is_ok_and(|c| c.answers_slowly());
    client.set_answer_timeout((!slow).then_some(TIMEOUT))?;
    client.request(command)
}
