// Writes the nested Parquet fixtures of datasets' chat-record readers (files_chat_parquet_test.go) with
// DuckDB, a writer independent of parquet-go. Run once from this folder with DuckDB's Node package installed
// in a scratch folder outside the repository (make test needs neither); the files are committed:
//
//   mkdir -p /tmp/fixture-writer && (cd /tmp/fixture-writer && npm install @duckdb/node-api@1.5.6-r.1)
//   NODE_PATH=/tmp/fixture-writer/node_modules node write_parquet.mjs
//
// It prints each file's row groups, compression and encodings, as DuckDB's parquet_metadata reads them.
import { createRequire } from 'node:module';
import path from 'node:path';

const require = createRequire(path.join(process.env.NODE_PATH || '.', 'x.js'));
const { DuckDBInstance } = require('@duckdb/node-api');

const db = await DuckDBInstance.create(':memory:');
const c = await db.connect();
await c.run('SET threads = 1'); // one writer thread: row groups in row order

// UltraChat-like: messages list<struct<role, content>>, 3000 rows in two row groups (DuckDB cuts them at
// multiples of 2048 rows), zstd, the roles dictionary-encoded. Row i: a system prompt, then the user's
// "question i" and the assistant's "answer i"; the assistant's content is null where i % 7 == 3; row 5's
// messages are null; row 6's list is empty.
await c.run(`COPY (
  SELECT 'u' || i AS prompt_id,
         CASE WHEN i = 5 THEN NULL
              WHEN i = 6 THEN []::STRUCT(role VARCHAR, content VARCHAR)[]
              ELSE [{'role': 'system', 'content': 'Answer briefly.'},
                    {'role': 'user', 'content': 'question ' || i},
                    {'role': 'assistant', 'content': CASE WHEN i % 7 = 3 THEN NULL ELSE 'answer ' || i END}]
         END AS messages
  FROM range(3000) t(i) ORDER BY i
) TO 'ultrachat.parquet' (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE 2048)`);

// DailyDialog: dialog list<string>, speakers alternating; snappy. Row 1 holds a null string.
await c.run(`COPY (
  SELECT * FROM (VALUES
    (0, ['Say, Jim, how about going for a few beers after dinner?', 'You know that is tempting but is really not good for our fitness.', 'What do you mean?'], [3, 4, 2]),
    (1, ['Can you do push-ups?', NULL, 'Of course I can.', 'Great, show me.'], [2, 1, 1, 3]),
    (2, ['Grüß Gott!', 'Servus!'], [1, 1])
  ) v(n, dialog, act) ORDER BY n
) TO 'dailydialog.parquet' (FORMAT parquet, COMPRESSION snappy)`);

// MultiWOZ 2.2 on the hub: turns struct<turn_id: list<string>, speaker: list<int>, utterance: list<string>>,
// the speaker a ClassLabel (0 user, 1 system); snappy.
await c.run(`COPY (
  SELECT * FROM (VALUES
    ('PMUL4398.json', ['restaurant', 'hotel'], {'turn_id': ['0', '1', '2'], 'speaker': [0, 1, 0],
      'utterance': ['i need a place to dine in the center thats expensive',
                    'I have several options for you; do you prefer African, Asian, or British food?',
                    'Any sort of food would be fine, as long as it is a bit expensive.']}),
    ('SNG0129.json', ['taxi'], {'turn_id': ['0', '1'], 'speaker': [0, 1],
      'utterance': ['I need a taxi to the station.', 'What time would you like to leave?']})
  ) v(dialogue_id, services, turns) ORDER BY dialogue_id
) TO 'multiwoz.parquet' (FORMAT parquet, COMPRESSION snappy)`);

for (const f of ['ultrachat.parquet', 'dailydialog.parquet', 'multiwoz.parquet']) {
  const r = await c.runAndReadAll(`SELECT row_group_id, row_group_num_rows, path_in_schema, compression, encodings FROM parquet_metadata('${f}')`);
  for (const row of r.getRows()) console.log(f, row.map(String).join(' | '));
}
