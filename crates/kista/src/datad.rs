//! `kista datad`: the data node.
//!
//! The data engine (storage, transactions, transport) arrives in a later change; until then
//! the data node resolves its thread layout and prints it.

use clap::Args;

use crate::thread_options::ThreadOptions;
use crate::Failure;

#[derive(Args, Debug)]
pub struct DatadArgs {
    #[command(flatten)]
    threads: ThreadOptions,

    /// Print the thread layout, one line per thread, and exit. Required until the data node
    /// has blocks to run.
    #[arg(long, required = true)]
    print_thread_config: bool,
}

pub fn run(args: &DatadArgs) -> Result<(), Failure> {
    let layout = args.threads.layout()?;
    if args.print_thread_config {
        print!("{layout}");
    }
    Ok(())
}
