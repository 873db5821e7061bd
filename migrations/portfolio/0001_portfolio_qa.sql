-- Portfolio question answering: knowledge chunks, their local vectors,
-- the response cache, conversation history and content state.

CREATE TABLE knowledge_chunks (
  id TEXT PRIMARY KEY,
  source TEXT NOT NULL,
  source_id TEXT NOT NULL,
  item_id TEXT NOT NULL,
  title TEXT NOT NULL,
  chunk_index INTEGER NOT NULL,
  content TEXT NOT NULL,
  content_hash TEXT NOT NULL,
  embedding_model TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE INDEX knowledge_chunks_source ON knowledge_chunks (source);
CREATE UNIQUE INDEX knowledge_chunks_source_chunk ON knowledge_chunks (source_id, chunk_index);

-- The local vector index (production uses Vectorize instead).
CREATE TABLE chunk_vectors (
  id TEXT PRIMARY KEY,
  source TEXT NOT NULL,
  model TEXT NOT NULL,
  vector BLOB NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE INDEX chunk_vectors_model ON chunk_vectors (model);

CREATE TABLE response_cache (
  id TEXT PRIMARY KEY,
  question TEXT NOT NULL,
  question_key TEXT NOT NULL,
  question_embedding BLOB NOT NULL,
  embedding_model TEXT NOT NULL,
  response TEXT NOT NULL,
  sources TEXT NOT NULL,
  source_chunk_ids TEXT NOT NULL,
  hit_count INTEGER NOT NULL DEFAULT 0,
  created_at INTEGER NOT NULL,
  invalidated_at INTEGER
);
CREATE INDEX response_cache_valid_key ON response_cache (question_key, created_at)
  WHERE invalidated_at IS NULL;
CREATE INDEX response_cache_valid_created ON response_cache (embedding_model, created_at)
  WHERE invalidated_at IS NULL;

-- Both messages of a turn share created_at; the autoincrement id orders them.
CREATE TABLE conversation_messages (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  session_id TEXT NOT NULL,
  role TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
  content TEXT NOT NULL,
  created_at INTEGER NOT NULL
);
CREATE INDEX conversation_messages_session ON conversation_messages (session_id, id);

CREATE TABLE content_state (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL,
  updated_at INTEGER NOT NULL
);
