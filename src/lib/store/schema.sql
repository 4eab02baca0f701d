-- b4box state store, schema version 1. Applied by migrate.c when user_version < 1.
CREATE TABLE threads (
        id          TEXT PRIMARY KEY NOT NULL,
        metadata    TEXT NOT NULL DEFAULT '{}',
        owner       TEXT,
        parent_id   TEXT,
        created_ms  INTEGER NOT NULL
) STRICT;
CREATE INDEX threads_owner ON threads(owner);

CREATE TABLE thread_records (
        thread_id   TEXT PRIMARY KEY NOT NULL REFERENCES threads(id) ON DELETE CASCADE,
        digest      TEXT NOT NULL,
        payload     TEXT NOT NULL
) STRICT;

CREATE TABLE permission_grants (
        thread_id   TEXT NOT NULL REFERENCES threads(id) ON DELETE CASCADE,
        tool        TEXT NOT NULL,
        pattern     TEXT NOT NULL,
        PRIMARY KEY (thread_id, tool, pattern)
) STRICT;

CREATE TABLE sources (
        digest      TEXT PRIMARY KEY NOT NULL,
        size        INTEGER NOT NULL,
        payload     BLOB NOT NULL,
        uploaded_ms INTEGER NOT NULL
) STRICT;

CREATE TABLE source_uploaders (
        digest      TEXT NOT NULL REFERENCES sources(digest) ON DELETE CASCADE,
        principal   TEXT NOT NULL,
        stamp       TEXT,
        PRIMARY KEY (digest, principal)
) STRICT;

CREATE TABLE associations (
        thread_id     TEXT PRIMARY KEY NOT NULL REFERENCES threads(id) ON DELETE CASCADE,
        source_digest TEXT,
        intent_digest TEXT NOT NULL,
        state         TEXT NOT NULL,
        revision      INTEGER NOT NULL,
        payload       TEXT NOT NULL
) STRICT;
