//! SHOW statements that are views of `information_schema`, parsed into the query they
//! stand for (as MySQL 8 runs them): `SHOW TABLE STATUS [FROM db]`, `SHOW COLLATION`,
//! `SHOW CHARACTER SET` (or `CHARSET`), `SHOW ENGINES`, `SHOW [FULL] PROCESSLIST`,
//! `SHOW TRIGGERS [FROM db]`, each with `LIKE 'pattern'` (on the first column; SHOW
//! TRIGGERS' on the table) or `WHERE condition` (on the shown columns); and `SHOW CREATE
//! DATABASE`. The query then runs as any other.

use sqlparser::ast::Statement;
use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserError};

use super::rewrite::is_word;
use super::KistaDialect;

/// One SHOW statement and the query that answers it.
struct ShowForm {
    /// The words after SHOW.
    words: &'static [&'static str],
    /// The rows, with the shown columns' names; `{database}` stands for the database
    /// named by `FROM`, or the session's.
    source: &'static str,
    /// The column `LIKE` matches.
    named_by: &'static str,
}

const FORMS: &[ShowForm] = &[
    ShowForm {
        words: &["TABLE", "STATUS"],
        source: "SELECT TABLE_NAME AS `Name`, ENGINE AS `Engine`, VERSION AS `Version`, \
                 ROW_FORMAT AS `Row_format`, TABLE_ROWS AS `Rows`, \
                 AVG_ROW_LENGTH AS `Avg_row_length`, DATA_LENGTH AS `Data_length`, \
                 MAX_DATA_LENGTH AS `Max_data_length`, INDEX_LENGTH AS `Index_length`, \
                 DATA_FREE AS `Data_free`, AUTO_INCREMENT AS `Auto_increment`, \
                 CREATE_TIME AS `Create_time`, UPDATE_TIME AS `Update_time`, \
                 CHECK_TIME AS `Check_time`, TABLE_COLLATION AS `Collation`, \
                 CHECKSUM AS `Checksum`, CREATE_OPTIONS AS `Create_options`, \
                 TABLE_COMMENT AS `Comment` FROM information_schema.TABLES \
                 WHERE TABLE_SCHEMA = {database}",
        named_by: "Name",
    },
    ShowForm {
        words: &["COLLATION"],
        source: "SELECT COLLATION_NAME AS `Collation`, CHARACTER_SET_NAME AS `Charset`, \
                 ID AS `Id`, IS_DEFAULT AS `Default`, IS_COMPILED AS `Compiled`, \
                 SORTLEN AS `Sortlen`, PAD_ATTRIBUTE AS `Pad_attribute` \
                 FROM information_schema.COLLATIONS",
        named_by: "Collation",
    },
    ShowForm {
        words: &["CHARACTER", "SET"],
        source: CHARSETS,
        named_by: "Charset",
    },
    ShowForm {
        words: &["PROCESSLIST"],
        source: "SELECT ID AS `Id`, USER AS `User`, HOST AS `Host`, DB AS `db`, \
                 COMMAND AS `Command`, TIME AS `Time`, STATE AS `State`, \
                 LEFT(INFO, 100) AS `Info` FROM information_schema.PROCESSLIST",
        named_by: "Id",
    },
    ShowForm {
        words: &["FULL", "PROCESSLIST"],
        source: "SELECT ID AS `Id`, USER AS `User`, HOST AS `Host`, DB AS `db`, \
                 COMMAND AS `Command`, TIME AS `Time`, STATE AS `State`, INFO AS `Info` \
                 FROM information_schema.PROCESSLIST",
        named_by: "Id",
    },
    ShowForm {
        words: &["ENGINES"],
        source: "SELECT ENGINE AS `Engine`, SUPPORT AS `Support`, COMMENT AS `Comment`, \
                 TRANSACTIONS AS `Transactions`, XA AS `XA`, SAVEPOINTS AS `Savepoints` \
                 FROM information_schema.ENGINES",
        named_by: "Engine",
    },
    ShowForm {
        words: &["TRIGGERS"],
        source: "SELECT TRIGGER_NAME AS `Trigger`, EVENT_MANIPULATION AS `Event`, \
                 EVENT_OBJECT_TABLE AS `Table`, ACTION_STATEMENT AS `Statement`, \
                 ACTION_TIMING AS `Timing`, NULL AS `Created`, '' AS `sql_mode`, \
                 DEFINER AS `Definer`, 'utf8mb4' AS `character_set_client`, \
                 'utf8mb4_0900_ai_ci' AS `collation_connection`, \
                 'utf8mb4_0900_ai_ci' AS `Database Collation` \
                 FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = {database}",
        // MySQL's SHOW TRIGGERS LIKE matches the table, not the trigger.
        named_by: "Table",
    },
    ShowForm {
        words: &["CHARSET"],
        source: CHARSETS,
        named_by: "Charset",
    },
];

const CHARSETS: &str = "SELECT CHARACTER_SET_NAME AS `Charset`, DESCRIPTION AS `Description`, \
                        DEFAULT_COLLATE_NAME AS `Default collation`, MAXLEN AS `Maxlen` \
                        FROM information_schema.CHARACTER_SETS";

/// The form the statement is, if it is one (it starts with SHOW and the form's words).
fn form_of(parser: &Parser) -> Option<&'static ShowForm> {
    let tokens = parser.peek_tokens::<3>();
    if !is_word(&tokens[0], "SHOW") {
        return None;
    }
    FORMS.iter().find(|form| {
        form.words
            .iter()
            .zip(&tokens[1..])
            .all(|(word, token)| is_word(token, word))
    })
}

pub(super) fn starts_show_view(parser: &Parser) -> bool {
    form_of(parser).is_some()
}

/// The SHOW statement as its query: `SELECT * FROM (source) AS shown [WHERE ...] ORDER BY 1`.
pub(super) fn parse_show_view(parser: &mut Parser) -> Result<Statement, ParserError> {
    let form = form_of(parser).ok_or_else(|| ParserError::ParserError("not a SHOW view".into()))?;
    for _ in 0..=form.words.len() {
        parser.next_token();
    }
    let database = if parser
        .parse_one_of_keywords(&[Keyword::FROM, Keyword::IN])
        .is_some()
    {
        let name = parser.parse_identifier()?;
        format!("'{}'", name.value.replace('\'', "''"))
    } else {
        "DATABASE()".to_string()
    };
    let filter = if parser.parse_keyword(Keyword::LIKE) {
        let pattern = parser.parse_literal_string()?;
        format!(
            " WHERE `{}` LIKE '{}'",
            form.named_by,
            pattern.replace('\'', "''")
        )
    } else if parser.parse_keyword(Keyword::WHERE) {
        format!(" WHERE {}", parser.parse_expr()?)
    } else {
        String::new()
    };
    let source = form.source.replace("{database}", &database);
    let query = format!("SELECT * FROM ({source}) AS shown{filter} ORDER BY 1");
    Parser::new(&KistaDialect)
        .try_with_sql(&query)?
        .parse_query()
        .map(Statement::Query)
}

pub(super) fn starts_show_create_database(parser: &Parser) -> bool {
    let tokens = parser.peek_tokens::<3>();
    is_word(&tokens[0], "SHOW")
        && is_word(&tokens[1], "CREATE")
        && (is_word(&tokens[2], "DATABASE") || is_word(&tokens[2], "SCHEMA"))
}

/// `SHOW CREATE DATABASE|SCHEMA [IF NOT EXISTS] name` as its query of
/// `information_schema.SCHEMATA` (no row for a database that is not there).
pub(super) fn parse_show_create_database(parser: &mut Parser) -> Result<Statement, ParserError> {
    for _ in 0..3 {
        parser.next_token();
    }
    let if_not_exists = parser.parse_keywords(&[Keyword::IF, Keyword::NOT, Keyword::EXISTS]);
    let name = parser.parse_identifier()?.value.to_lowercase();
    let if_not_exists = if if_not_exists {
        "/*!32312 IF NOT EXISTS*/ "
    } else {
        ""
    };
    let query = format!(
        "SELECT SCHEMA_NAME AS `Database`, CONCAT('CREATE DATABASE {if_not_exists}`', \
         REPLACE(SCHEMA_NAME, '`', '``'), '` /*!40100 DEFAULT CHARACTER SET ', \
         DEFAULT_CHARACTER_SET_NAME, ' COLLATE ', DEFAULT_COLLATION_NAME, \
         ' */ /*!80016 DEFAULT ENCRYPTION=''N'' */') AS `Create Database` \
         FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = '{}'",
        name.replace('\'', "''")
    );
    Parser::new(&KistaDialect)
        .try_with_sql(&query)?
        .parse_query()
        .map(Statement::Query)
}

#[cfg(test)]
mod tests {
    use super::super::tests::parsed;

    #[test]
    fn shows_become_queries_of_information_schema() {
        let status = parsed("SHOW TABLE STATUS FROM shop LIKE 'or%'").unwrap();
        assert!(
            status.contains("FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'shop'"),
            "{status}"
        );
        assert!(
            status.ends_with(") AS shown WHERE `Name` LIKE 'or%' ORDER BY 1"),
            "{status}"
        );
        let here = parsed("SHOW TABLE STATUS").unwrap();
        assert!(here.contains("TABLE_SCHEMA = DATABASE()"), "{here}");
        let collation = parsed("show collation where Charset = 'utf8mb4'").unwrap();
        assert!(
            collation.ends_with("WHERE Charset = 'utf8mb4' ORDER BY 1"),
            "{collation}"
        );
        assert!(parsed("SHOW CHARSET LIKE 'utf8%'")
            .unwrap()
            .contains("CHARACTER_SETS"));
        assert!(parsed("SHOW TABLE STATUS LIKE").is_err());
        let triggers = parsed("SHOW TRIGGERS FROM shop LIKE 'child'").unwrap();
        assert!(
            triggers.contains("TRIGGER_SCHEMA = 'shop'")
                && triggers.ends_with("WHERE `Table` LIKE 'child' ORDER BY 1"),
            "{triggers}"
        );
        let database = parsed("SHOW CREATE DATABASE IF NOT EXISTS `Shop`").unwrap();
        assert!(
            database.contains("IF NOT EXISTS") && database.ends_with("SCHEMA_NAME = 'shop'"),
            "{database}"
        );
        assert!(parsed("SHOW TABLES").unwrap().starts_with("SHOW TABLES"));
    }
}
