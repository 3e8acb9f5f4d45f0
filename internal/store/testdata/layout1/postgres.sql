--
-- PostgreSQL database dump
--


-- Dumped from database version 15.18 (Debian 15.18-0+deb12u1)
-- Dumped by pg_dump version 15.18 (Debian 15.18-0+deb12u1)

SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;

--
-- Name: sponson; Type: SCHEMA; Schema: -; Owner: -
--

CREATE SCHEMA sponson;


--
-- Name: fence(text, text, text, bigint); Type: FUNCTION; Schema: sponson; Owner: -
--

CREATE FUNCTION sponson.fence(p_env text, p_scope text, p_holder text, p_token bigint) RETURNS bigint
    LANGUAGE plpgsql
    AS $$
DECLARE
	cur record;
BEGIN
	PERFORM 1 FROM sponson.leases
	 WHERE env = p_env AND scope = p_scope AND holder = p_holder AND token = p_token
	   AND expires_at > clock_timestamp()
	   FOR SHARE;
	IF FOUND THEN
		RETURN p_token;
	END IF;
	SELECT holder, token, expires_at INTO cur FROM sponson.leases WHERE env = p_env AND scope = p_scope;
	IF NOT FOUND THEN
		RAISE EXCEPTION USING ERRCODE = 'SP001', MESSAGE = 'the scope has no lease record';
	ELSIF cur.holder IS NULL THEN
		RAISE EXCEPTION USING ERRCODE = 'SP001', MESSAGE = format('the lease was released (token %s)', cur.token);
	ELSIF cur.holder <> p_holder OR cur.token <> p_token THEN
		RAISE EXCEPTION USING ERRCODE = 'SP001', MESSAGE = format('the lease is now %s''s with token %s', cur.holder, cur.token);
	ELSE
		RAISE EXCEPTION USING ERRCODE = 'SP001', MESSAGE = format('the lease expired at %s',
			to_char(cur.expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'));
	END IF;
END
$$;


SET default_tablespace = '';

SET default_table_access_method = heap;

--
-- Name: latest; Type: TABLE; Schema: sponson; Owner: -
--

CREATE TABLE sponson.latest (
    env text NOT NULL COLLATE pg_catalog."C",
    scope text NOT NULL COLLATE pg_catalog."C",
    run_id text NOT NULL COLLATE pg_catalog."C",
    token bigint NOT NULL,
    written_at timestamp with time zone NOT NULL
);


--
-- Name: leases; Type: TABLE; Schema: sponson; Owner: -
--

CREATE TABLE sponson.leases (
    env text NOT NULL COLLATE pg_catalog."C",
    scope text NOT NULL COLLATE pg_catalog."C",
    holder text COLLATE pg_catalog."C",
    token bigint NOT NULL,
    acquired_at timestamp with time zone NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    last_holder text NOT NULL COLLATE pg_catalog."C",
    grant_id text NOT NULL,
    preempted_holder text COLLATE pg_catalog."C",
    preempted_token bigint,
    preempted_acquired_at timestamp with time zone,
    preempted_expires_at timestamp with time zone,
    CONSTRAINT leases_token_check CHECK ((token > 0))
);


--
-- Name: owners; Type: TABLE; Schema: sponson; Owner: -
--

CREATE TABLE sponson.owners (
    env text NOT NULL COLLATE pg_catalog."C",
    scope text NOT NULL COLLATE pg_catalog."C",
    ord integer NOT NULL,
    identity text NOT NULL COLLATE pg_catalog."C",
    address text NOT NULL,
    created_by text NOT NULL,
    run_id text NOT NULL COLLATE pg_catalog."C",
    since timestamp with time zone NOT NULL
);


--
-- Name: quarantine; Type: TABLE; Schema: sponson; Owner: -
--

CREATE TABLE sponson.quarantine (
    env text NOT NULL COLLATE pg_catalog."C",
    scope text NOT NULL COLLATE pg_catalog."C",
    run_id text NOT NULL COLLATE pg_catalog."C",
    at timestamp with time zone NOT NULL,
    data bytea NOT NULL
);


--
-- Name: receipts; Type: TABLE; Schema: sponson; Owner: -
--

CREATE TABLE sponson.receipts (
    env text NOT NULL COLLATE pg_catalog."C",
    scope text NOT NULL COLLATE pg_catalog."C",
    run_id text NOT NULL COLLATE pg_catalog."C",
    token bigint NOT NULL,
    written_at timestamp with time zone NOT NULL,
    body json NOT NULL
);


--
-- Name: records; Type: TABLE; Schema: sponson; Owner: -
--

CREATE TABLE sponson.records (
    env text NOT NULL COLLATE pg_catalog."C",
    scope text NOT NULL COLLATE pg_catalog."C",
    name text NOT NULL COLLATE pg_catalog."C",
    token bigint NOT NULL,
    written_at timestamp with time zone NOT NULL,
    data bytea NOT NULL
);


--
-- Name: schema_version; Type: TABLE; Schema: sponson; Owner: -
--

CREATE TABLE sponson.schema_version (
    version integer NOT NULL,
    applied_at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    applied_by text DEFAULT CURRENT_USER NOT NULL
);


--
-- Name: states; Type: TABLE; Schema: sponson; Owner: -
--

CREATE TABLE sponson.states (
    env text NOT NULL COLLATE pg_catalog."C",
    scope text NOT NULL COLLATE pg_catalog."C",
    token bigint NOT NULL,
    written_at timestamp with time zone NOT NULL,
    data bytea NOT NULL
);


--
-- Data for Name: latest; Type: TABLE DATA; Schema: sponson; Owner: -
--

INSERT INTO sponson.latest VALUES ('preview', 'pr-7', 'run-ec1586c7', 1, '2026-12-01 13:57:13.047044+00');
INSERT INTO sponson.latest VALUES ('preview', 'main', 'run-f6db9517', 1, '2026-12-01 13:57:13.462313+00');


--
-- Data for Name: leases; Type: TABLE DATA; Schema: sponson; Owner: -
--

INSERT INTO sponson.leases VALUES ('preview', 'pr-7', NULL, 1, '2026-12-01 13:57:12.63642+00', '2026-12-01 13:57:13.047792+00', 'run-ec1586c7', 'cb540e0059bf7764ba043bbe4101d48d', NULL, NULL, NULL, NULL);
INSERT INTO sponson.leases VALUES ('preview', 'main', NULL, 1, '2026-12-01 13:57:13.0952+00', '2026-12-01 13:57:13.472754+00', 'run-f6db9517', 'd147897ff80e5afdaa4b9ac6b7e218ce', NULL, NULL, NULL, NULL);


--
-- Data for Name: owners; Type: TABLE DATA; Schema: sponson; Owner: -
--

INSERT INTO sponson.owners VALUES ('preview', 'pr-7', 1, 'terraform.io/builtin/terraform|terraform_data|id="3701dae6-bc45-425f-aef2-9a1456aa3ab1"', 'terraform_data.a', 'created', 'run-ec1586c7', '2026-12-01 13:57:13.047239+00');
INSERT INTO sponson.owners VALUES ('preview', 'pr-7', 2, 'terraform.io/builtin/terraform|terraform_data|id="c1acd774-1372-f53e-55b6-756d1ce1b78f"', 'terraform_data.b', 'created', 'run-ec1586c7', '2026-12-01 13:57:13.047249+00');
INSERT INTO sponson.owners VALUES ('preview', 'main', 1, 'terraform.io/builtin/terraform|terraform_data|id="4d95969f-4798-07d8-540d-995364e658c9"', 'terraform_data.a', 'created', 'run-f6db9517', '2026-12-01 13:57:13.469762+00');
INSERT INTO sponson.owners VALUES ('preview', 'main', 2, 'terraform.io/builtin/terraform|terraform_data|id="f806bfd4-a153-65db-4ea4-1d551dfdc97d"', 'terraform_data.b', 'created', 'run-f6db9517', '2026-12-01 13:57:13.46981+00');


--
-- Data for Name: quarantine; Type: TABLE DATA; Schema: sponson; Owner: -
--



--
-- Data for Name: receipts; Type: TABLE DATA; Schema: sponson; Owner: -
--

INSERT INTO sponson.receipts VALUES ('preview', 'pr-7', 'run-ec1586c7', 1, '2026-12-01 13:57:13.046996+00', '{
  "version": 1,
  "runId": "run-ec1586c7",
  "command": "apply",
  "environment": "preview",
  "scope": "pr-7",
  "status": "applied",
  "startedAt": "2026-12-01T13:57:12.635547699Z",
  "finishedAt": "2026-12-01T13:57:13.046044957Z",
  "pullRequest": 7,
  "engine": {
    "name": "opentofu",
    "version": "1.12.6"
  },
  "changes": [
    {
      "address": "terraform_data.a",
      "type": "terraform_data",
      "actions": [
        "create"
      ]
    },
    {
      "address": "terraform_data.b",
      "type": "terraform_data",
      "actions": [
        "create"
      ]
    }
  ],
  "ledger": [
    {
      "identity": "terraform.io/builtin/terraform|terraform_data|id=\"3701dae6-bc45-425f-aef2-9a1456aa3ab1\"",
      "address": "terraform_data.a",
      "provider": "terraform.io/builtin/terraform",
      "type": "terraform_data",
      "id": "3701dae6-bc45-425f-aef2-9a1456aa3ab1",
      "createdBy": "created"
    },
    {
      "identity": "terraform.io/builtin/terraform|terraform_data|id=\"c1acd774-1372-f53e-55b6-756d1ce1b78f\"",
      "address": "terraform_data.b",
      "provider": "terraform.io/builtin/terraform",
      "type": "terraform_data",
      "id": "c1acd774-1372-f53e-55b6-756d1ce1b78f",
      "createdBy": "created"
    }
  ]
}
');
INSERT INTO sponson.receipts VALUES ('preview', 'main', 'run-f6db9517', 1, '2026-12-01 13:57:13.462134+00', '{
  "version": 1,
  "runId": "run-f6db9517",
  "command": "apply",
  "environment": "preview",
  "scope": "main",
  "status": "applied",
  "startedAt": "2026-12-01T13:57:13.094289113Z",
  "finishedAt": "2026-12-01T13:57:13.45988092Z",
  "engine": {
    "name": "opentofu",
    "version": "1.12.6"
  },
  "changes": [
    {
      "address": "terraform_data.a",
      "type": "terraform_data",
      "actions": [
        "create"
      ]
    },
    {
      "address": "terraform_data.b",
      "type": "terraform_data",
      "actions": [
        "create"
      ]
    }
  ],
  "ledger": [
    {
      "identity": "terraform.io/builtin/terraform|terraform_data|id=\"4d95969f-4798-07d8-540d-995364e658c9\"",
      "address": "terraform_data.a",
      "provider": "terraform.io/builtin/terraform",
      "type": "terraform_data",
      "id": "4d95969f-4798-07d8-540d-995364e658c9",
      "createdBy": "created"
    },
    {
      "identity": "terraform.io/builtin/terraform|terraform_data|id=\"f806bfd4-a153-65db-4ea4-1d551dfdc97d\"",
      "address": "terraform_data.b",
      "provider": "terraform.io/builtin/terraform",
      "type": "terraform_data",
      "id": "f806bfd4-a153-65db-4ea4-1d551dfdc97d",
      "createdBy": "created"
    }
  ]
}
');


--
-- Data for Name: records; Type: TABLE DATA; Schema: sponson; Owner: -
--



--
-- Data for Name: schema_version; Type: TABLE DATA; Schema: sponson; Owner: -
--

INSERT INTO sponson.schema_version VALUES (1, '2026-12-01 13:57:12.615573+00', 'postgres');


--
-- Data for Name: states; Type: TABLE DATA; Schema: sponson; Owner: -
--

INSERT INTO sponson.states VALUES ('preview', 'pr-7', 1, '2026-12-01 13:57:13.040641+00', '\x7b2276657273696f6e223a342c227465727261666f726d5f76657273696f6e223a22312e31322e36222c2273657269616c223a312c226c696e65616765223a2236633438316431332d636637332d386661612d376334622d363165363264373965336163222c226f757470757473223a7b7d2c227265736f7572636573223a5b7b226d6f6465223a226d616e61676564222c2274797065223a227465727261666f726d5f64617461222c226e616d65223a2261222c2270726f7669646572223a2270726f76696465725b5c227465727261666f726d2e696f2f6275696c74696e2f7465727261666f726d5c225d222c22696e7374616e636573223a5b7b22736368656d615f76657273696f6e223a302c2261747472696275746573223a7b226964223a2233373031646165362d626334352d343235662d616566322d396131343536616133616231222c22696e707574223a7b2276616c7565223a2261222c2274797065223a22737472696e67227d2c226f7574707574223a7b2276616c7565223a2261222c2274797065223a22737472696e67227d2c2274726967676572735f7265706c616365223a6e756c6c7d2c2273656e7369746976655f61747472696275746573223a5b5d7d5d7d2c7b226d6f6465223a226d616e61676564222c2274797065223a227465727261666f726d5f64617461222c226e616d65223a2262222c2270726f7669646572223a2270726f76696465725b5c227465727261666f726d2e696f2f6275696c74696e2f7465727261666f726d5c225d222c22696e7374616e636573223a5b7b22736368656d615f76657273696f6e223a302c2261747472696275746573223a7b226964223a2263316163643737342d313337322d663533652d353562362d373536643163653162373866222c22696e707574223a7b2276616c7565223a2262222c2274797065223a22737472696e67227d2c226f7574707574223a7b2276616c7565223a2262222c2274797065223a22737472696e67227d2c2274726967676572735f7265706c616365223a6e756c6c7d2c2273656e7369746976655f61747472696275746573223a5b5d7d5d7d5d2c22636865636b5f726573756c7473223a6e756c6c7d0a');
INSERT INTO sponson.states VALUES ('preview', 'main', 1, '2026-12-01 13:57:13.455827+00', '\x7b2276657273696f6e223a342c227465727261666f726d5f76657273696f6e223a22312e31322e36222c2273657269616c223a312c226c696e65616765223a2236356263353261332d356265342d303032362d633261652d346232336338393766313731222c226f757470757473223a7b7d2c227265736f7572636573223a5b7b226d6f6465223a226d616e61676564222c2274797065223a227465727261666f726d5f64617461222c226e616d65223a2261222c2270726f7669646572223a2270726f76696465725b5c227465727261666f726d2e696f2f6275696c74696e2f7465727261666f726d5c225d222c22696e7374616e636573223a5b7b22736368656d615f76657273696f6e223a302c2261747472696275746573223a7b226964223a2234643935393639662d343739382d303764382d353430642d393935333634653635386339222c22696e707574223a7b2276616c7565223a2261222c2274797065223a22737472696e67227d2c226f7574707574223a7b2276616c7565223a2261222c2274797065223a22737472696e67227d2c2274726967676572735f7265706c616365223a6e756c6c7d2c2273656e7369746976655f61747472696275746573223a5b5d7d5d7d2c7b226d6f6465223a226d616e61676564222c2274797065223a227465727261666f726d5f64617461222c226e616d65223a2262222c2270726f7669646572223a2270726f76696465725b5c227465727261666f726d2e696f2f6275696c74696e2f7465727261666f726d5c225d222c22696e7374616e636573223a5b7b22736368656d615f76657273696f6e223a302c2261747472696275746573223a7b226964223a2266383036626664342d613135332d363564622d346561342d316435353164666463393764222c22696e707574223a7b2276616c7565223a2262222c2274797065223a22737472696e67227d2c226f7574707574223a7b2276616c7565223a2262222c2274797065223a22737472696e67227d2c2274726967676572735f7265706c616365223a6e756c6c7d2c2273656e7369746976655f61747472696275746573223a5b5d7d5d7d5d2c22636865636b5f726573756c7473223a6e756c6c7d0a');


--
-- Name: latest latest_pkey; Type: CONSTRAINT; Schema: sponson; Owner: -
--

ALTER TABLE ONLY sponson.latest
    ADD CONSTRAINT latest_pkey PRIMARY KEY (env, scope);


--
-- Name: leases leases_pkey; Type: CONSTRAINT; Schema: sponson; Owner: -
--

ALTER TABLE ONLY sponson.leases
    ADD CONSTRAINT leases_pkey PRIMARY KEY (env, scope);


--
-- Name: owners owners_pkey; Type: CONSTRAINT; Schema: sponson; Owner: -
--

ALTER TABLE ONLY sponson.owners
    ADD CONSTRAINT owners_pkey PRIMARY KEY (env, scope, ord);


--
-- Name: quarantine quarantine_pkey; Type: CONSTRAINT; Schema: sponson; Owner: -
--

ALTER TABLE ONLY sponson.quarantine
    ADD CONSTRAINT quarantine_pkey PRIMARY KEY (env, scope, run_id);


--
-- Name: receipts receipts_pkey; Type: CONSTRAINT; Schema: sponson; Owner: -
--

ALTER TABLE ONLY sponson.receipts
    ADD CONSTRAINT receipts_pkey PRIMARY KEY (env, scope, run_id);


--
-- Name: records records_pkey; Type: CONSTRAINT; Schema: sponson; Owner: -
--

ALTER TABLE ONLY sponson.records
    ADD CONSTRAINT records_pkey PRIMARY KEY (env, scope, name);


--
-- Name: schema_version schema_version_pkey; Type: CONSTRAINT; Schema: sponson; Owner: -
--

ALTER TABLE ONLY sponson.schema_version
    ADD CONSTRAINT schema_version_pkey PRIMARY KEY (version);


--
-- Name: states states_pkey; Type: CONSTRAINT; Schema: sponson; Owner: -
--

ALTER TABLE ONLY sponson.states
    ADD CONSTRAINT states_pkey PRIMARY KEY (env, scope);


--
-- Name: owners_by_identity; Type: INDEX; Schema: sponson; Owner: -
--

CREATE INDEX owners_by_identity ON sponson.owners USING btree (env, identity);


--
-- Name: latest latest_env_scope_run_id_fkey; Type: FK CONSTRAINT; Schema: sponson; Owner: -
--

ALTER TABLE ONLY sponson.latest
    ADD CONSTRAINT latest_env_scope_run_id_fkey FOREIGN KEY (env, scope, run_id) REFERENCES sponson.receipts(env, scope, run_id);


--
-- PostgreSQL database dump complete
--


