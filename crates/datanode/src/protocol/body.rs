//! What travels in sections: operation bodies, rows, table definitions.

use kista_storage::codec::{
    read_index_schema, read_table_schema, read_values, write_index_schema, write_table_schema,
    write_values, CodecError, Reader, Writer,
};
use kista_storage::schema::{IndexSchema, TableSchema};
use kista_storage::types::Value;

/// A key operation's section: the encoded primary key, then the columns and values.
///
/// - insert / write: `columns` empty, `values` every column in table order;
/// - update: `columns` and `values` pair up (the columns to change);
/// - read: `columns` is the projection (empty: every column), `values` empty;
/// - delete: both empty.
#[derive(Clone, Debug, PartialEq)]
pub struct KeyBody {
    pub key: Vec<u8>,
    pub columns: Vec<u16>,
    pub values: Vec<Value>,
}

impl KeyBody {
    pub fn encode(&self, out: &mut Vec<u8>) {
        let mut writer = Writer(out);
        writer.bytes(&self.key);
        writer.u32(self.columns.len() as u32);
        for &column in &self.columns {
            writer.u16(column);
        }
        write_values(&mut writer, &self.values);
    }

    pub fn decode(bytes: &[u8]) -> Result<Self, CodecError> {
        let mut input = Reader::new(bytes);
        let key = input.bytes()?.to_vec();
        let count = input.u32()? as usize;
        if count.saturating_mul(2) > input.remaining() {
            return Err(CodecError::Invalid {
                what: "column count",
                offset: input.offset(),
            });
        }
        let columns = (0..count).map(|_| input.u16()).collect::<Result<_, _>>()?;
        let values = read_values(&mut input)?;
        input.finish()?;
        Ok(Self {
            key,
            columns,
            values,
        })
    }
}

/// A row read for a client: the projected columns' values.
#[derive(Clone, Debug, PartialEq)]
pub struct RowBody {
    pub values: Vec<Value>,
}

impl RowBody {
    pub fn encode(values: &[Value], out: &mut Vec<u8>) {
        write_values(&mut Writer(out), values);
    }

    pub fn decode(bytes: &[u8]) -> Result<Self, CodecError> {
        let mut input = Reader::new(bytes);
        let values = read_values(&mut input)?;
        input.finish()?;
        Ok(Self { values })
    }
}

/// A table as the dictionary publishes it: schema and secondary indexes.
#[derive(Clone, Debug, PartialEq)]
pub struct TableDefinitionBody {
    pub schema: TableSchema,
    /// (index id, schema).
    pub indexes: Vec<(u32, IndexSchema)>,
}

impl TableDefinitionBody {
    pub fn encode(&self, out: &mut Vec<u8>) {
        let mut writer = Writer(out);
        write_table_schema(&mut writer, &self.schema);
        writer.u32(self.indexes.len() as u32);
        for (id, index) in &self.indexes {
            writer.u32(*id);
            write_index_schema(&mut writer, index);
        }
    }

    pub fn decode(bytes: &[u8]) -> Result<Self, CodecError> {
        let mut input = Reader::new(bytes);
        let schema = read_table_schema(&mut input)?;
        let count = input.u32()? as usize;
        if count.saturating_mul(10) > input.remaining() {
            return Err(CodecError::Invalid {
                what: "index count",
                offset: input.offset(),
            });
        }
        let mut indexes = Vec::with_capacity(count);
        for _ in 0..count {
            let id = input.u32()?;
            indexes.push((id, read_index_schema(&mut input)?));
        }
        input.finish()?;
        Ok(Self { schema, indexes })
    }
}
