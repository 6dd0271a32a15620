//! One client connection: the handshake, then commands until the client quits or the
//! connection breaks. A malformed packet closes this connection only; a statement's error
//! is answered with an error packet and the session goes on.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;

use kista_client::types::Value;

use crate::admission::{Admission, Admitted};
use crate::catalog::Catalog;
use crate::error::{SqlError, SqlResult};
use crate::point_read::Responder;
use crate::processes::{Command, Process};
use crate::protocol::auth::SCRAMBLE_BYTES;
use crate::protocol::binary::{read_parameter, PARAMETER_UNSIGNED};
use crate::protocol::handshake::{
    asks_for_tls, authenticate, change_user, greet, read_answer, HandshakeError, Users,
};
use crate::protocol::long_data::LongData;
use crate::protocol::packet::{PacketError, PacketStream};
use crate::protocol::results::{self, ColumnDefinition};
use crate::protocol::wire::{put_u16, put_u32, Input, Malformed};
use crate::protocol::{capability, column_type, command, status};
use crate::result_set::{ResultForm, ResultWriter};
use crate::select::RowSink;
use crate::session::{parse, Outcome, Parsed, PlanCache, Session};
use crate::statement_text::statement_text;
use crate::text_statements::TextStatements;
use crate::tls::{negotiated, Negotiated, TlsError, Unread};

/// Prepared statements one connection may hold (MySQL's `max_prepared_stmt_count` is
/// server-wide, 16382).
pub const PREPARED_STATEMENTS_MAX: usize = 16_382;

struct Prepared {
    /// Its text, as SHOW PROCESSLIST shows it while it runs.
    sql: String,
    parsed: Parsed,
    parameters: usize,
    /// Each parameter's type code and unsigned flag, as the last execute bound them.
    types: Vec<(u8, bool)>,
    plan: PlanCache,
}

/// Why a connection ended other than by the client quitting.
#[derive(Debug, thiserror::Error)]
pub enum ConnectionError {
    #[error(transparent)]
    Packet(#[from] PacketError),
    #[error(transparent)]
    Handshake(#[from] HandshakeError),
    #[error(transparent)]
    Malformed(#[from] Malformed),
    #[error(transparent)]
    Tls(#[from] TlsError),
}

struct Connection<'c, S: Read + Write> {
    stream: PacketStream<S>,
    /// The accounts, for COM_CHANGE_USER.
    users: &'c Users,
    /// The connection's place among those logged in, and where it came from (taken
    /// again as the new account at COM_CHANGE_USER).
    admitted: Option<Admitted>,
    admission: &'c Arc<Admission>,
    /// Answers point reads from the receive thread (TCP clients only).
    responder: Option<Arc<Responder>>,
    session: Session<'c>,
    capabilities: u32,
    prepared: HashMap<u32, Prepared>,
    /// What COM_STMT_SEND_LONG_DATA sent the prepared statements, bounded.
    long_data: LongData,
    next_statement_id: u32,
    /// Text INSERTs' shapes, parsed once.
    text_statements: TextStatements,
}

/// Answers a login with `error` (the connection then ends).
fn refuse_login<S: Read + Write>(
    stream: &mut PacketStream<S>,
    error: &SqlError,
) -> Result<(), ConnectionError> {
    let mut out = Vec::new();
    results::error(&mut out, error.code, error.state, &error.message);
    stream.write_payload(&out);
    stream.flush().map_err(PacketError::from)?;
    Ok(())
}

/// Serves one client until it quits (`Ok`) or the connection fails: the connection phase,
/// in TLS from the client's `SSLRequest` on if it sends one, then its commands.
pub fn serve(
    socket: TcpStream,
    responder: Option<Arc<Responder>>,
    context: (&Catalog, &Users, &Arc<Admission>),
    process: Arc<Process>,
) -> Result<(), ConnectionError> {
    let tls = context.0.tls.as_deref();
    let mut stream = PacketStream::new(socket);
    let version = crate::session::SERVER_VERSION;
    let scramble = greet(&mut stream, process.id, version, tls.is_some())?;
    let mut answer = Vec::new();
    read_answer(&mut stream, &mut answer)?;
    if !asks_for_tls(&answer)? {
        if tls.is_some_and(|tls| tls.require_secure_transport) {
            return refuse_login(&mut stream, &SqlError::insecure_transport());
        }
        let phase = LoginPhase {
            answer: &answer,
            scramble: &scramble,
            secure: None,
        };
        return log_in_and_serve(stream, responder, phase, context, process);
    }
    let Some(tls) = tls else {
        return Err(HandshakeError::TlsNotOffered.into());
    };
    let (socket, sequence, unread) = stream.into_parts();
    let encrypted = tls.accept(Unread::new(unread, socket))?;
    let mut stream = PacketStream::resume(encrypted, sequence);
    read_answer(&mut stream, &mut answer)?;
    let phase = LoginPhase {
        answer: &answer,
        scramble: &scramble,
        secure: Some(negotiated(stream.get_ref())),
    };
    // Answers go through TLS only: the receive thread's direct writes are not used.
    log_in_and_serve(stream, None, phase, context, process)
}

/// The client's handshake response, and what it answers.
struct LoginPhase<'p> {
    answer: &'p [u8],
    scramble: &'p [u8; SCRAMBLE_BYTES],
    /// The TLS the connection runs in, if it does.
    secure: Option<Negotiated>,
}

/// Checks the client's login, admits it and serves its commands.
fn log_in_and_serve<S: Read + Write>(
    mut stream: PacketStream<S>,
    responder: Option<Arc<Responder>>,
    phase: LoginPhase<'_>,
    (catalog, users, admission): (&Catalog, &Users, &Arc<Admission>),
    process: Arc<Process>,
) -> Result<(), ConnectionError> {
    let login = match authenticate(&mut stream, users, phase.scramble, phase.answer) {
        Ok(login) => login,
        Err(HandshakeError::AccessDenied {
            user,
            with_password,
        }) => return refuse_login(&mut stream, &SqlError::access_denied(&user, with_password)),
        Err(error) => return Err(error.into()),
    };
    stream.logged_in();
    let mut session = Session::new(catalog, login.user, process.id);
    session.privileges = crate::accounts::at_login(catalog, &session.user);
    session.secure = phase.secure;
    let admitted = match admission.admit(crate::accounts::may_kill_others(&session)) {
        Ok(admitted) => admitted,
        Err(error) => return refuse_login(&mut stream, &error),
    };
    process.log_in(&session.user);
    session.process = Some(process);
    let mut connection = Connection {
        stream,
        users,
        admitted: Some(admitted),
        admission,
        responder,
        session,
        capabilities: login.capabilities,
        prepared: HashMap::new(),
        long_data: LongData::default(),
        next_statement_id: 1,
        text_statements: TextStatements::default(),
    };
    if let Some(database) = &login.database {
        if let Err(error) = connection.session.use_database(database) {
            connection.send_error(&error);
            connection.stream.flush().map_err(PacketError::from)?;
            return Ok(());
        }
    }
    connection.send_ok(0, 0, "");
    connection.stream.flush().map_err(PacketError::from)?;
    let result = connection.run();
    if let Some(responder) = &connection.responder {
        responder.wait_idle();
    }
    // Whatever was open is rolled back, as when a MySQL client disconnects.
    let _ = connection.session.rollback();
    result
}

/// What the command loop does once a command ran.
enum After {
    /// Sends the answer written.
    Replied,
    /// Nothing to send (the command has no answer).
    Silent,
    /// Ends the connection.
    Quit,
}

impl<S: Read + Write> Connection<'_, S> {
    fn run(&mut self) -> Result<(), ConnectionError> {
        let mut payload = Vec::with_capacity(1024);
        loop {
            self.stream.reset_sequence();
            match self.stream.read_payload(&mut payload) {
                Ok(true) => {}
                Ok(false) => return Ok(()),
                Err(PacketError::TooLarge(bytes_max)) => {
                    // MySQL's answer, then the connection closes: the rest of the command
                    // is still on its way and cannot be told from a next one.
                    let mut out = Vec::new();
                    let message = format!(
                        "Got a packet bigger than 'max_allowed_packet' bytes ({bytes_max})"
                    );
                    results::error(&mut out, 1153, "08S01", &message);
                    self.stream.write_payload(&out);
                    self.stream.flush().map_err(PacketError::from)?;
                    return Ok(());
                }
                Err(error) => return Err(error.into()),
            }
            let Some((&command, body)) = payload.split_first() else {
                return Err(Malformed("empty command").into());
            };
            self.catch_up_with_responder();
            match self.command(command, body)? {
                After::Quit => return Ok(()),
                After::Silent => continue,
                After::Replied => {}
            }
            self.stream.flush().map_err(PacketError::from)?;
            if let Some(process) = &self.session.process {
                process.end();
            }
        }
    }

    /// An answer still being written by the receive thread goes first; what it learned
    /// (a table changed, the rows it answered) the session takes over.
    #[inline]
    fn catch_up_with_responder(&mut self) {
        let Some(responder) = &self.responder else {
            return;
        };
        responder.wait_idle();
        if responder.take_stale_schema() {
            self.session.catalog.forget_all();
        }
        if let Some(rows) = responder.take_answered_rows() {
            self.session.found_rows = rows;
        }
    }

    /// Runs a statement of the text protocol (inlined into [`Self::command`] as it was).
    #[inline(always)]
    fn query(&mut self, sql: &str) {
        self.begin(Command::Query, sql);
        let outcome = match self.text_statements.parse(sql) {
            Ok((parsed, values)) => match parsed.load_data.as_deref() {
                Some(load) if load.local => self.load_local(load),
                _ => {
                    let form = self.form(false);
                    let mut writer = ResultWriter::new(&mut self.stream, form);
                    let (cache, sink) = (&mut PlanCache::default(), Some(&mut writer as _));
                    self.session.execute_to(&parsed, cache, &values, sink)
                }
            },
            Err(error) => {
                // Unparsed, the statement ran nothing: its error is all it says.
                self.session.warnings.get_mut().clear();
                Err(error)
            }
        };
        self.send_outcome(outcome, false);
    }

    /// A statement whose bytes could not be read as text ran nothing: its error is all it
    /// says.
    fn send_unparsed(&mut self, error: &SqlError) {
        self.session.warnings.get_mut().clear();
        self.send_error(error);
    }

    /// Runs one command of the client (inlined: every statement passes here, and the
    /// call cost 55 instructions a point select, callgrind).
    #[inline(always)]
    fn command(&mut self, command: u8, body: &[u8]) -> Result<After, ConnectionError> {
        match command {
            command::QUIT => return Ok(After::Quit),
            command::PING => self.send_ok(0, 0, ""),
            command::INIT_DB => {
                let name = String::from_utf8_lossy(body).into_owned();
                match self.session.use_database(&name) {
                    Ok(()) => self.send_ok(0, 0, ""),
                    Err(error) => self.send_error(&error),
                }
            }
            command::QUERY => match statement_text(body) {
                Ok(sql) => self.query(&sql),
                Err(error) => self.send_unparsed(&error),
            },
            command::STMT_PREPARE => match statement_text(body) {
                Ok(sql) => {
                    self.begin(Command::Prepare, &sql);
                    self.prepare(&sql);
                }
                Err(error) => self.send_unparsed(&error),
            },
            command::STMT_EXECUTE => self.execute(body)?,
            command::STMT_SEND_LONG_DATA | command::STMT_CLOSE | command::STMT_RESET => {
                return self.statement_command(command, body)
            }
            command::FIELD_LIST => self.field_list(body),
            command::SET_OPTION => self.send_eof(),
            command::RESET_CONNECTION => {
                let (user, database) = (self.session.user.clone(), self.session.database.take());
                self.reset_session(user);
                self.session.database = database;
                self.send_ok(0, 0, "");
            }
            command::CHANGE_USER => {
                if !self.change_user(body)? {
                    return Ok(After::Quit);
                }
            }
            command::STATISTICS => {
                let uptime = self.session.catalog.uptime_s();
                let threads = self.session.catalog.connections();
                let statistics = format!("Uptime: {uptime}  Threads: {threads}");
                self.stream.write_payload(statistics.as_bytes());
            }
            other => self.send_error(&SqlError::new(
                1047,
                "08S01",
                format!("Unknown command {other}"),
            )),
        }
        Ok(After::Replied)
    }

    /// `COM_STMT_SEND_LONG_DATA` and `COM_STMT_CLOSE` (no answer), `COM_STMT_RESET`.
    fn statement_command(&mut self, command: u8, body: &[u8]) -> Result<After, ConnectionError> {
        let mut input = Input::new(body);
        let id = input.u32("statement id")?;
        match command {
            command::STMT_SEND_LONG_DATA => {
                let parameter = usize::from(input.u16("parameter")?);
                if self.prepared.contains_key(&id) {
                    self.long_data.append(id, parameter, input.rest());
                }
                Ok(After::Silent)
            }
            command::STMT_CLOSE => {
                self.prepared.remove(&id);
                self.long_data.forget(id);
                Ok(After::Silent)
            }
            _ => {
                match self.prepared.get_mut(&id) {
                    Some(_) => {
                        self.long_data.forget(id);
                        self.send_ok(0, 0, "");
                    }
                    None => self.send_error(&SqlError::unknown_statement(id)),
                }
                Ok(After::Replied)
            }
        }
    }

    /// Notes for SHOW PROCESSLIST that a command began.
    fn begin(&self, command: Command, statement: &str) {
        if let Some(process) = &self.session.process {
            process.begin(command, self.session.database.as_deref(), statement);
        }
    }

    /// A session as new for `user`: what was open is rolled back, prepared statements
    /// and variables go (COM_RESET_CONNECTION, COM_CHANGE_USER).
    fn reset_session(&mut self, user: String) {
        let _ = self.session.rollback();
        let process = self.session.process.take();
        if let Some(process) = &process {
            process.set_user(&user);
        }
        self.session = Session::new(self.session.catalog, user, self.session.connection_id);
        self.session.privileges =
            crate::accounts::at_login(self.session.catalog, &self.session.user);
        self.session.process = process;
        self.prepared.clear();
    }

    /// COM_CHANGE_USER: the session starts again as the account the client names, after
    /// a fresh password check. `Ok(false)`: refused (error 1045 sent), the connection ends,
    /// as its old session is gone.
    fn change_user(&mut self, body: &[u8]) -> Result<bool, ConnectionError> {
        let scramble = crate::protocol::auth::new_scramble();
        let capabilities = self.capabilities;
        match change_user(&mut self.stream, self.users, body, &scramble, capabilities) {
            Ok(login) => {
                self.reset_session(login.user);
                // Admitted again as the new account: an administrator's connection that
                // becomes an ordinary account's does not keep the place kept beyond the
                // limit for administrators.
                self.admitted = None;
                let administrator = crate::accounts::may_kill_others(&self.session);
                match self.admission.admit(administrator) {
                    Ok(admitted) => self.admitted = Some(admitted),
                    Err(error) => {
                        self.send_error(&error);
                        self.stream.flush().map_err(PacketError::from)?;
                        return Ok(false);
                    }
                }
                match login.database.map(|d| self.session.use_database(&d)) {
                    Some(Err(error)) => self.send_error(&error),
                    _ => self.send_ok(0, 0, ""),
                }
                Ok(true)
            }
            Err(HandshakeError::AccessDenied {
                user,
                with_password,
            }) => {
                let _ = self.session.rollback();
                self.send_error(&SqlError::access_denied(&user, with_password));
                self.stream.flush().map_err(PacketError::from)?;
                Ok(false)
            }
            Err(error) => Err(error.into()),
        }
    }

    /// LOAD DATA LOCAL: the file comes from the client, if it offered to send files.
    fn load_local(&mut self, load: &crate::load_data::LoadData) -> SqlResult<Outcome> {
        if self.capabilities & capability::LOCAL_FILES == 0 {
            return Err(SqlError::new(
                3948,
                "42000",
                "Loading local data is disabled; this must be enabled on both the client and \
                 server sides",
            ));
        }
        crate::load_data::local::run(&mut self.session, &mut self.stream, load)
    }

    fn status(&self) -> u16 {
        status_flags(&self.session)
    }

    /// How this client takes a result set now.
    fn form(&self, binary: bool) -> ResultForm {
        result_form(self.capabilities, &self.session, binary)
    }

    fn warnings(&self) -> u16 {
        (self.session.warnings.borrow().len()).min(usize::from(u16::MAX)) as u16
    }

    fn deprecate_eof(&self) -> bool {
        deprecates_eof(self.capabilities)
    }

    fn send_ok(&mut self, affected_rows: u64, last_insert_id: u64, info: &str) {
        let mut out = Vec::with_capacity(16);
        results::ok(
            &mut out,
            false,
            affected_rows,
            last_insert_id,
            self.status(),
            self.warnings(),
            info,
        );
        self.stream.write_payload(&out);
    }

    fn send_eof(&mut self) {
        let mut out = Vec::with_capacity(8);
        results::eof(&mut out, self.warnings(), self.status());
        self.stream.write_payload(&out);
    }

    /// Ends a list of column definitions or rows: EOF, or OK with the EOF header.
    fn send_end(&mut self) {
        if self.deprecate_eof() {
            let mut out = Vec::with_capacity(16);
            results::ok(&mut out, true, 0, 0, self.status(), self.warnings(), "");
            self.stream.write_payload(&out);
        } else {
            self.send_eof();
        }
    }

    fn send_error(&mut self, error: &SqlError) {
        self.session.catalog.processes.count_error(error.code);
        self.session.keep_error(error.code, &error.message);
        let mut out = Vec::with_capacity(64 + error.message.len());
        results::error(&mut out, error.code, error.state, &error.message);
        self.stream.write_payload(&out);
    }

    fn send_columns(&mut self, columns: &[ColumnDefinition]) {
        let mut out = Vec::with_capacity(64);
        for column in columns {
            out.clear();
            column.encode(&mut out);
            self.stream.write_payload(&out);
        }
    }

    fn send_outcome(&mut self, outcome: SqlResult<Outcome>, binary: bool) {
        match outcome {
            Err(error) => self.send_error(&error),
            Ok(Outcome::Done {
                affected_rows,
                last_insert_id,
                info,
            }) => self.send_ok(affected_rows, last_insert_id, &info),
            Ok(Outcome::Rows { columns, rows }) => {
                let form = self.form(binary);
                let mut writer = ResultWriter::new(&mut self.stream, form);
                let sent = (writer.columns(columns))
                    .and_then(|()| rows.iter().try_for_each(|row| writer.row(row)));
                // Unsent, the connection is broken: its last flush ends it.
                if sent.is_ok() {
                    self.send_end();
                }
            }
            Ok(Outcome::Streamed { .. }) => self.send_end(),
        }
    }

    fn prepare(&mut self, sql: &str) {
        let parsed = match parse(sql) {
            Ok(parsed) => parsed,
            Err(error) => return self.send_error(&error),
        };
        if self.prepared.len() >= PREPARED_STATEMENTS_MAX {
            return self.send_error(&SqlError::new(
                1461,
                "42000",
                format!("Can't create more than {PREPARED_STATEMENTS_MAX} prepared statements"),
            ));
        }
        let columns = match crate::select::prepared_columns(&mut self.session, &parsed) {
            Ok(columns) => columns,
            Err(error) => return self.send_error(&error),
        };
        let id = self.next_statement_id;
        self.next_statement_id = self.next_statement_id.wrapping_add(1).max(1);
        let parameters = parsed.placeholders.len();
        let mut out = Vec::with_capacity(16);
        out.push(results::OK_HEADER);
        put_u32(&mut out, id);
        put_u16(&mut out, columns.len() as u16);
        put_u16(&mut out, parameters as u16);
        out.push(0);
        put_u16(&mut out, 0);
        self.stream.write_payload(&out);
        if parameters > 0 {
            let parameter = ColumnDefinition::expression(
                "?",
                column_type::VAR_STRING,
                0,
                0,
                crate::protocol::COLLATION_BINARY,
            );
            self.send_columns(&vec![parameter; parameters]);
            if !self.deprecate_eof() {
                self.send_eof();
            }
        }
        if !columns.is_empty() {
            self.send_columns(&columns);
            if !self.deprecate_eof() {
                self.send_eof();
            }
        }
        self.prepared.insert(
            id,
            Prepared {
                sql: sql.to_string(),
                parsed,
                parameters,
                types: vec![(column_type::VAR_STRING, false); parameters],
                plan: PlanCache::default(),
            },
        );
    }

    fn execute(&mut self, body: &[u8]) -> Result<(), ConnectionError> {
        let mut input = Input::new(body);
        let id = input.u32("statement id")?;
        let _flags = input.u8("cursor flags")?;
        let _iterations = input.u32("iteration count")?;
        if let Err(error) = self.long_data.check(id) {
            self.send_error(&error);
            return Ok(());
        }
        let Some(statement) = self.prepared.get_mut(&id) else {
            self.send_error(&SqlError::unknown_statement(id));
            return Ok(());
        };
        if let Some(process) = &self.session.process {
            process.begin(
                Command::Execute,
                self.session.database.as_deref(),
                &statement.sql,
            );
        }
        let count = statement.parameters;
        let mut params = Vec::with_capacity(count);
        if count > 0 {
            let null_bitmap = input.take(count.div_ceil(8), "null bitmap")?.to_vec();
            if input.u8("new parameters bound")? == 1 {
                for slot in statement.types.iter_mut() {
                    let type_code = input.u8("parameter type")?;
                    let flags = input.u8("parameter flags")?;
                    *slot = (type_code, flags & PARAMETER_UNSIGNED != 0);
                }
            }
            for (position, &(type_code, unsigned)) in statement.types.iter().enumerate() {
                if let Some(bytes) = self.long_data.take(id, position) {
                    params.push(Value::Bytes(bytes));
                } else if null_bitmap[position / 8] & (1 << (position % 8)) != 0 {
                    params.push(Value::Null);
                } else {
                    params.push(read_parameter(&mut input, type_code, unsigned)?);
                }
            }
        }
        // Sent for a parameter the statement does not have: nothing holds it longer.
        self.long_data.forget(id);
        if let Some(responder) = self.responder.clone() {
            if let Some(point) = self
                .session
                .point_read(&statement.parsed, &mut statement.plan)
            {
                if let Some(key) = point.key_values(&params) {
                    let client = self.session.catalog.client();
                    match point.send(client, &key, responder, self.capabilities) {
                        Ok(()) => return Ok(()),
                        Err(error) => {
                            self.send_error(&SqlError::from_cluster(&error));
                            return Ok(());
                        }
                    }
                }
            }
        }
        // (`self.form` would borrow all of self, `statement` included)
        let form = result_form(self.capabilities, &self.session, true);
        let mut writer = ResultWriter::new(&mut self.stream, form);
        let (parsed, plan) = (&statement.parsed, &mut statement.plan);
        let outcome = (self.session).execute_to(parsed, plan, &params, Some(&mut writer));
        self.send_outcome(outcome, true);
        Ok(())
    }

    /// `COM_FIELD_LIST` (old clients' column completion): the table's column definitions.
    fn field_list(&mut self, body: &[u8]) {
        let table = String::from_utf8_lossy(body.split(|&b| b == 0).next().unwrap_or_default())
            .into_owned();
        let columns = self
            .session
            .current_database()
            .map(str::to_string)
            .and_then(|database| {
                let table = self.session.catalog.table(&database, &table)?;
                Ok(table
                    .schema()
                    .columns
                    .iter()
                    .enumerate()
                    .map(|(position, c)| {
                        let origin = crate::output::Origin {
                            schema: &table.database,
                            table: &table.name,
                            column: &c.name,
                            nullable: c.nullable,
                            sql_type: table.sql_type(position),
                            fraction_digits: Some(table.extras.columns[position].fraction_digits),
                        };
                        crate::output::definition(
                            &c.name,
                            Some(c.column_type),
                            Some(origin),
                            std::iter::empty(),
                            None,
                        )
                    })
                    .collect::<Vec<_>>())
            });
        match columns {
            Ok(columns) => {
                self.send_columns(&columns);
                self.send_end();
            }
            Err(error) => self.send_error(&error),
        }
    }
}

/// How a client of `capabilities` takes a result set in `session`'s state.
fn result_form(capabilities: u32, session: &Session, binary: bool) -> ResultForm {
    ResultForm {
        binary,
        deprecate_eof: deprecates_eof(capabilities),
        status: status_flags(session),
    }
}

/// Whether a client of `capabilities` takes no EOF after column definitions.
fn deprecates_eof(capabilities: u32) -> bool {
    capabilities & capability::DEPRECATE_EOF != 0
}

/// The status flags of `session`'s state: autocommit, in a transaction.
fn status_flags(session: &Session) -> u16 {
    let mut flags = 0;
    if session.autocommit {
        flags |= status::AUTOCOMMIT;
    }
    if session.in_transaction() {
        flags |= status::IN_TRANSACTION;
    }
    flags
}
