PRAGMA foreign_keys=OFF;
BEGIN TRANSACTION;
CREATE TABLE alembic_version (
	version_num VARCHAR(32) NOT NULL, 
	CONSTRAINT alembic_version_pkc PRIMARY KEY (version_num)
);
INSERT INTO alembic_version VALUES('f460b0348206');
CREATE TABLE servers (
	id INTEGER NOT NULL, 
	proto VARCHAR(15), 
	ip VARCHAR(255), 
	port INTEGER, 
	base_url VARCHAR(255), 
	cookie_name VARCHAR(255), 
	CONSTRAINT pk_servers PRIMARY KEY (id)
);
INSERT INTO servers VALUES(1,'http','127.0.0.1',43145,'/user/alice/','cookie');
INSERT INTO servers VALUES(2,'http','',0,'/user/bob/train/','cookie');
CREATE TABLE roles (
	id INTEGER NOT NULL, 
	name VARCHAR(255), 
	description VARCHAR(1023), 
	scopes TEXT, 
	managed_by_auth BOOLEAN NOT NULL, 
	CONSTRAINT pk_roles PRIMARY KEY (id), 
	CONSTRAINT uq_roles_name UNIQUE (name)
);
INSERT INTO roles VALUES(1,'user','Standard user privileges','["self"]',0);
INSERT INTO roles VALUES(2,'admin','Elevated privileges (can do anything)','["admin-ui", "admin:users", "admin:servers", "admin:services", "tokens", "admin:groups", "list:services", "read:services", "read:hub", "proxy", "shutdown", "access:services", "access:servers", "read:roles", "read:metrics", "shares"]',0);
INSERT INTO roles VALUES(3,'server','Post activity only','["users:activity!user", "access:servers!server"]',0);
INSERT INTO roles VALUES(4,'token','Token with same permissions as its owner','["inherit"]',0);
INSERT INTO roles VALUES(5,'tests',NULL,'["admin:users", "admin:servers", "tokens"]',0);
CREATE TABLE groups (
	id INTEGER NOT NULL, 
	name VARCHAR(255), 
	properties TEXT, 
	CONSTRAINT pk_groups PRIMARY KEY (id), 
	CONSTRAINT uq_groups_name UNIQUE (name)
);
INSERT INTO "groups" VALUES(1,'dsportal-idle-7200','{}');
CREATE TABLE users (
	id INTEGER NOT NULL, 
	name VARCHAR(255), 
	user_info TEXT, 
	admin BOOLEAN, 
	created DATETIME, 
	last_activity DATETIME, 
	cookie_id VARCHAR(255) NOT NULL, 
	state TEXT, 
	encrypted_auth_state BLOB, 
	CONSTRAINT pk_users PRIMARY KEY (id), 
	CONSTRAINT uq_users_name UNIQUE (name), 
	CONSTRAINT uq_users_cookie_id UNIQUE (cookie_id)
);
INSERT INTO users VALUES(1,'carol',NULL,1,'2026-11-29 14:13:32.824505',NULL,'9ed76150707a48ffa3e68824f7f24809',NULL,NULL);
INSERT INTO users VALUES(2,'bob',NULL,0,'2026-11-29 14:13:32.845982','2026-11-29 14:13:35.886202','172cab0ca1504f1cb412b7d84b48deed',NULL,NULL);
INSERT INTO users VALUES(3,'alice',NULL,0,'2026-11-29 14:13:32.848519','2026-11-29 14:13:34.508084','d316ea40375a4aa79c44dad7e1b592a5','{}',NULL);
CREATE TABLE oauth_clients (
	id INTEGER NOT NULL, 
	identifier VARCHAR(255), 
	description VARCHAR(1023), 
	secret VARCHAR(255), 
	redirect_uri VARCHAR(1023), 
	allowed_scopes TEXT, 
	CONSTRAINT pk_oauth_clients PRIMARY KEY (id), 
	CONSTRAINT uq_oauth_clients_identifier UNIQUE (identifier)
);
INSERT INTO oauth_clients VALUES(1,'jupyterhub','JupyterHub','','','[]');
INSERT INTO oauth_clients VALUES(2,'jupyterhub-user-alice','Server at /user/alice/','sha512:16384:c733744a3a7aaaba:024ec822a2b2ed7d959fc2ef086394589c47ecd0e08fdc721b99ce1d007b5358c1e2ff612acd1b8ae137d9468962a381912a880036f777451ab44cf5b19e1e95','/user/alice/oauth_callback','["access:servers!server=alice/"]');
INSERT INTO oauth_clients VALUES(3,'jupyterhub-user-bob-train','Server at /user/bob/train/','sha512:16384:c61e2eab8e978be7:f101bbd1e8b4e95a46d3811ba59f0494aa832a04782a6852d972f45700a244c554b8e80410851a08a5d5bbeebba4ed48d549c74153c38e903204a1b12d07d018','/user/bob/train/oauth_callback','["access:servers!server=bob/train"]');
CREATE TABLE user_role_map (
	user_id INTEGER NOT NULL, 
	role_id INTEGER NOT NULL, 
	managed_by_auth BOOLEAN NOT NULL, 
	CONSTRAINT pk_user_role_map PRIMARY KEY (user_id, role_id), 
	CONSTRAINT fk_user_role_map_user_id_users FOREIGN KEY(user_id) REFERENCES users (id) ON DELETE CASCADE, 
	CONSTRAINT fk_user_role_map_role_id_roles FOREIGN KEY(role_id) REFERENCES roles (id) ON DELETE CASCADE
);
INSERT INTO user_role_map VALUES(1,2,0);
INSERT INTO user_role_map VALUES(1,1,0);
INSERT INTO user_role_map VALUES(3,1,0);
INSERT INTO user_role_map VALUES(2,1,0);
CREATE TABLE group_role_map (
	group_id INTEGER NOT NULL, 
	role_id INTEGER NOT NULL, 
	managed_by_auth BOOLEAN NOT NULL, 
	CONSTRAINT pk_group_role_map PRIMARY KEY (group_id, role_id), 
	CONSTRAINT fk_group_role_map_group_id_groups FOREIGN KEY(group_id) REFERENCES groups (id) ON DELETE CASCADE, 
	CONSTRAINT fk_group_role_map_role_id_roles FOREIGN KEY(role_id) REFERENCES roles (id) ON DELETE CASCADE
);
CREATE TABLE user_group_map (
	user_id INTEGER NOT NULL, 
	group_id INTEGER NOT NULL, 
	CONSTRAINT pk_user_group_map PRIMARY KEY (user_id, group_id), 
	CONSTRAINT fk_user_group_map_user_id_users FOREIGN KEY(user_id) REFERENCES users (id) ON DELETE CASCADE, 
	CONSTRAINT fk_user_group_map_group_id_groups FOREIGN KEY(group_id) REFERENCES groups (id) ON DELETE CASCADE
);
INSERT INTO user_group_map VALUES(3,1);
INSERT INTO user_group_map VALUES(2,1);
CREATE TABLE spawners (
	id INTEGER NOT NULL, 
	user_id INTEGER, 
	server_id INTEGER, 
	state TEXT, 
	name VARCHAR(255), 
	display_name VARCHAR(255), 
	started DATETIME, 
	last_activity DATETIME, 
	user_options TEXT, 
	oauth_client_id VARCHAR(255), 
	CONSTRAINT pk_spawners PRIMARY KEY (id), 
	CONSTRAINT fk_spawners_user_id_users FOREIGN KEY(user_id) REFERENCES users (id) ON DELETE CASCADE, 
	CONSTRAINT fk_spawners_server_id_servers FOREIGN KEY(server_id) REFERENCES servers (id) ON DELETE SET NULL, 
	CONSTRAINT fk_spawners_oauth_client_id_oauth_clients FOREIGN KEY(oauth_client_id) REFERENCES oauth_clients (identifier) ON DELETE SET NULL
);
INSERT INTO spawners VALUES(1,3,1,'{"version": 1, "job_id": "100", "job_status": "RUNNING||127.0.0.1", "token_sha256": "28f0a24950019bfe1a12fd9f71cd3347c8d673b246e487990a2e26ca8180a74d", "start_done": true, "limit": "8 h", "minutes": 480, "submitted": "2026-11-29T14:13", "started": "2026-11-29T14:13:35", "token_id": 3}','','','2026-11-29 14:13:34.508084','2026-11-29 14:13:34.508084','{"gpus": 1, "hours": 8}','jupyterhub-user-alice');
INSERT INTO spawners VALUES(2,2,NULL,NULL,'','',NULL,NULL,NULL,NULL);
INSERT INTO spawners VALUES(3,2,2,'{"version": 1, "job_id": "101", "job_status": "", "token_sha256": "81eb1c93619289672cfa3683453f5877aee7fed67de5431c0ac4ef7f6dc82236", "start_done": false, "limit": "2 h", "minutes": 120, "submitted": "2026-11-29T14:13", "token_id": 4}','train','train','2026-11-29 14:13:35.886202','2026-11-29 14:13:35.886202','{"gpus": 0, "hours": 2}','jupyterhub-user-bob-train');
CREATE TABLE services (
	id INTEGER NOT NULL, 
	name VARCHAR(255), 
	admin BOOLEAN, 
	url VARCHAR(2047), 
	oauth_client_allowed_scopes TEXT, 
	info TEXT, 
	display BOOLEAN, 
	oauth_no_confirm BOOLEAN, 
	command TEXT, 
	cwd VARCHAR(4095), 
	environment TEXT, 
	user VARCHAR(255), 
	timeout INTEGER NOT NULL, 
	from_config BOOLEAN, 
	_server_id INTEGER, 
	pid INTEGER, 
	oauth_client_id VARCHAR(255), 
	CONSTRAINT pk_services PRIMARY KEY (id), 
	CONSTRAINT uq_services_name UNIQUE (name), 
	CONSTRAINT fk_services__server_id_servers FOREIGN KEY(_server_id) REFERENCES servers (id) ON DELETE SET NULL, 
	CONSTRAINT fk_services_oauth_client_id_oauth_clients FOREIGN KEY(oauth_client_id) REFERENCES oauth_clients (identifier) ON DELETE SET NULL
);
INSERT INTO services VALUES(1,'tests',0,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,30,1,NULL,NULL,NULL);
CREATE TABLE oauth_codes (
	id INTEGER NOT NULL, 
	client_id VARCHAR(255), 
	code VARCHAR(36), 
	expires_at INTEGER, 
	redirect_uri VARCHAR(1023), 
	session_id VARCHAR(255), 
	user_id INTEGER, 
	scopes TEXT, 
	code_challenge VARCHAR(255), 
	code_challenge_method VARCHAR(64), 
	CONSTRAINT pk_oauth_codes PRIMARY KEY (id), 
	CONSTRAINT fk_oauth_codes_client_id_oauth_clients FOREIGN KEY(client_id) REFERENCES oauth_clients (identifier) ON DELETE CASCADE, 
	CONSTRAINT fk_oauth_codes_user_id_users FOREIGN KEY(user_id) REFERENCES users (id) ON DELETE CASCADE
);
CREATE TABLE service_role_map (
	service_id INTEGER NOT NULL, 
	role_id INTEGER NOT NULL, 
	managed_by_auth BOOLEAN NOT NULL, 
	CONSTRAINT pk_service_role_map PRIMARY KEY (service_id, role_id), 
	CONSTRAINT fk_service_role_map_service_id_services FOREIGN KEY(service_id) REFERENCES services (id) ON DELETE CASCADE, 
	CONSTRAINT fk_service_role_map_role_id_roles FOREIGN KEY(role_id) REFERENCES roles (id) ON DELETE CASCADE
);
INSERT INTO service_role_map VALUES(1,5,0);
CREATE TABLE shares (
	user_id INTEGER, 
	group_id INTEGER, 
	id INTEGER NOT NULL, 
	created_at DATETIME NOT NULL, 
	scopes TEXT, 
	expires_at DATETIME, 
	owner_id INTEGER, 
	spawner_id INTEGER, 
	CONSTRAINT pk_shares PRIMARY KEY (id), 
	CONSTRAINT fk_shares_user_id_users FOREIGN KEY(user_id) REFERENCES users (id) ON DELETE CASCADE, 
	CONSTRAINT fk_shares_group_id_groups FOREIGN KEY(group_id) REFERENCES groups (id) ON DELETE CASCADE, 
	CONSTRAINT fk_shares_owner_id_users FOREIGN KEY(owner_id) REFERENCES users (id) ON DELETE CASCADE, 
	CONSTRAINT fk_shares_spawner_id_spawners FOREIGN KEY(spawner_id) REFERENCES spawners (id) ON DELETE CASCADE
);
CREATE TABLE share_codes (
	hashed VARCHAR(255), 
	prefix VARCHAR(16), 
	exchange_count INTEGER, 
	last_exchanged_at DATETIME, 
	id INTEGER NOT NULL, 
	created_at DATETIME NOT NULL, 
	scopes TEXT, 
	expires_at DATETIME, 
	owner_id INTEGER, 
	spawner_id INTEGER, 
	CONSTRAINT pk_share_codes PRIMARY KEY (id), 
	CONSTRAINT uq_share_codes_hashed UNIQUE (hashed), 
	CONSTRAINT fk_share_codes_owner_id_users FOREIGN KEY(owner_id) REFERENCES users (id) ON DELETE CASCADE, 
	CONSTRAINT fk_share_codes_spawner_id_spawners FOREIGN KEY(spawner_id) REFERENCES spawners (id) ON DELETE CASCADE
);
CREATE TABLE api_tokens (
	user_id INTEGER, 
	service_id INTEGER, 
	id INTEGER NOT NULL, 
	hashed VARCHAR(255), 
	prefix VARCHAR(16), 
	client_id VARCHAR(255), 
	session_id VARCHAR(255), 
	created DATETIME, 
	expires_at DATETIME, 
	last_activity DATETIME, 
	note VARCHAR(1023), 
	scopes TEXT, 
	CONSTRAINT pk_api_tokens PRIMARY KEY (id), 
	CONSTRAINT fk_api_tokens_user_id_users FOREIGN KEY(user_id) REFERENCES users (id) ON DELETE CASCADE, 
	CONSTRAINT fk_api_tokens_service_id_services FOREIGN KEY(service_id) REFERENCES services (id) ON DELETE CASCADE, 
	CONSTRAINT uq_api_tokens_hashed UNIQUE (hashed), 
	CONSTRAINT fk_api_tokens_client_id_oauth_clients FOREIGN KEY(client_id) REFERENCES oauth_clients (identifier) ON DELETE CASCADE
);
INSERT INTO api_tokens VALUES(NULL,1,1,'sha512:16384:b4ab9e274abf0e2e:2ccb02ad0c9d7e2aea3ac3760e08c40713c3e132d5d18601ffd55a67f07b413b19fd79c97f5dce09c021611e96d27caf2857c8c0dcd081dfbb21eff70a6be391','test','jupyterhub',NULL,'2026-11-29 14:13:32.903009',NULL,'2026-11-29 14:13:34.238876','from config','["inherit"]');
INSERT INTO api_tokens VALUES(3,NULL,2,'sha512:1:21952306e0919e1c:c627b3dc60cfb906ed40fbebee144c4e0f3e64367dea2fe17407722b2e9c59dcc6b13792ed8c00896f820bbb4454790a00ea41eb66fd773fd235d703197b0b01','865b','jupyterhub',NULL,'2026-11-29 14:13:34.376442','2026-12-29 14:13:34.370623',NULL,'a script of alice''s','["inherit"]');
INSERT INTO api_tokens VALUES(3,NULL,3,'sha512:1:ad6c53f1e35007b8:d6b3c64874141cff71a07f65ec03fe3e7bd6360a00e5b4fb9ba507622a80156e0a324202d2367159472dfbd75088e4bc1aba10ed2da4960edfbbce87212848d3','8f9c','jupyterhub',NULL,'2026-11-29 14:13:34.478076',NULL,'2026-11-29 14:13:35.497421','Server at /user/alice/','["access:servers!server=alice/", "users:activity!user"]');
INSERT INTO api_tokens VALUES(2,NULL,4,'sha512:1:977fe95148e7999e:054bb27215feb3ab055ee574a3dbc2b298e33589f89917f7a4eddeae68c589f425b73ade43d6af36114e48b4776a76c11e783b388fca0d320b1e53677d5a2ce1','36ed','jupyterhub',NULL,'2026-11-29 14:13:35.852477',NULL,NULL,'Server at /user/bob/train/','["access:servers!server=bob/train", "users:activity!user"]');
CREATE INDEX ix_share_codes_prefix ON share_codes (prefix);
CREATE INDEX ix_api_tokens_prefix ON api_tokens (prefix);
COMMIT;
