//! `kista top`'s live view: a header and one table row per thread, sampled each second.
//! Keys: `s` changes the order, `q` (or Esc, Ctrl-C) quits. The terminal is restored however
//! the view ends.

use std::time::{Duration, Instant};

use kista_client::Client;
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Modifier, Style, Stylize};
use ratatui::text::Line;
use ratatui::widgets::{Row, Table};
use ratatui::Frame;

use super::{row_cells, sorted_rows, take_sample, Sample, SortBy, COLUMNS, COLUMN_WIDTHS};
use crate::Failure;

/// How often the view samples the cluster.
const REFRESH: Duration = Duration::from_secs(1);

pub(super) fn run(client: &Client, mgm: &str, sort: SortBy) -> Result<(), Failure> {
    let mut terminal = ratatui::init();
    let result = live(&mut terminal, client, mgm, sort);
    ratatui::restore();
    result
}

fn live(
    terminal: &mut ratatui::DefaultTerminal,
    client: &Client,
    mgm: &str,
    mut sort: SortBy,
) -> Result<(), Failure> {
    let terminal_failed = |e: std::io::Error| Failure::runtime(format!("the terminal: {e}"));
    let mut sample = take_sample(client);
    let mut taken = Instant::now();
    loop {
        terminal
            .draw(|frame| draw(frame, &sample, mgm, sort))
            .map_err(terminal_failed)?;
        let wait = REFRESH.saturating_sub(taken.elapsed());
        if event::poll(wait).map_err(terminal_failed)? {
            if let Event::Key(key) = event::read().map_err(terminal_failed)? {
                let ctrl_c =
                    key.code == KeyCode::Char('c') && key.modifiers.contains(KeyModifiers::CONTROL);
                match key.code {
                    _ if key.kind != KeyEventKind::Press => {}
                    KeyCode::Char('q') | KeyCode::Esc => return Ok(()),
                    _ if ctrl_c => return Ok(()),
                    KeyCode::Char('s') => sort = sort.next(),
                    _ => {}
                }
            }
        }
        if taken.elapsed() >= REFRESH {
            sample = take_sample(client);
            taken = Instant::now();
        }
    }
}

fn draw(frame: &mut Frame, sample: &Sample, mgm: &str, sort: SortBy) {
    let [header, table] =
        Layout::vertical([Constraint::Length(2), Constraint::Min(1)]).areas(frame.area());
    let live = sample.nodes.iter().filter(|n| n.live).count();
    let mut title = format!(
        "kista top  {mgm}  {} data nodes, {live} live  sorted by {}  (s: sort, q: quit)",
        sample.nodes.len(),
        sort.name()
    );
    for node in sample.nodes.iter().filter(|n| n.error.is_some()) {
        title.push_str(&format!(
            "  node {}: {}",
            node.node,
            node.error.as_deref().unwrap_or("")
        ));
    }
    let disks: Vec<String> = sample.nodes.iter().filter_map(|n| n.disk_text()).collect();
    let [title_line, disk_line] =
        Layout::vertical([Constraint::Length(1), Constraint::Length(1)]).areas(header);
    frame.render_widget(Line::from(title).bold(), title_line);
    frame.render_widget(Line::from(disks.join("   ")), disk_line);
    let rows = sorted_rows(sample, sort).into_iter().map(|row| {
        let style = match row.load_level {
            5 => Style::new().red(),
            4 => Style::new().yellow(),
            _ => Style::new(),
        };
        Row::new(row_cells(&row)).style(style)
    });
    let widths = COLUMN_WIDTHS.map(|width| Constraint::Length(width as u16));
    let widths: Vec<Constraint> = widths.into_iter().chain([Constraint::Min(10)]).collect();
    let header_row = Row::new(COLUMNS).style(Style::new().add_modifier(Modifier::REVERSED));
    frame.render_widget(Table::new(rows, widths).header(header_row), table);
}
