-- The schema and rows behind mariadb_dump.sql, made on MariaDB 10.11.19 (Debian 12's
-- mariadb-server) and dumped with
--   mariadb-dump --default-character-set=utf8mb4 --databases shop --triggers --routines \
--     --single-transaction
-- (crates/kista/tests/sql.rs::a_dump_mariadb_made_loads_with_its_rows_keys_view_and_trigger).
CREATE DATABASE shop CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci;
USE shop;
CREATE TABLE customers (
  id INT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  email VARCHAR(120) NOT NULL UNIQUE,
  name VARCHAR(80) NOT NULL,
  tier ENUM('basic','gold','platinum') NOT NULL DEFAULT 'basic',
  balance DECIMAL(12,2) NOT NULL DEFAULT 0.00,
  prefs JSON,
  avatar BLOB,
  created_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
  updated_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP,
  note TEXT COMMENT 'free text',
  KEY by_name (name)
) COMMENT='people who buy';
CREATE TABLE products (
  sku CHAR(8) NOT NULL PRIMARY KEY,
  title VARCHAR(200) NOT NULL,
  price DECIMAL(10,2) NOT NULL,
  weight_g INT UNSIGNED,
  added DATE,
  active TINYINT(1) NOT NULL DEFAULT 1,
  CONSTRAINT price_positive CHECK (price > 0)
);
CREATE TABLE orders (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  customer_id INT NOT NULL,
  placed DATETIME(3) NOT NULL,
  status VARCHAR(16) NOT NULL DEFAULT 'new',
  CONSTRAINT fk_orders_customer FOREIGN KEY (customer_id) REFERENCES customers (id) ON DELETE CASCADE ON UPDATE CASCADE
);
CREATE TABLE order_lines (
  order_id BIGINT NOT NULL,
  line SMALLINT NOT NULL,
  sku CHAR(8) NOT NULL,
  qty INT NOT NULL DEFAULT 1,
  PRIMARY KEY (order_id, line),
  KEY by_sku (sku),
  CONSTRAINT fk_lines_order FOREIGN KEY (order_id) REFERENCES orders (id) ON DELETE CASCADE,
  CONSTRAINT fk_lines_product FOREIGN KEY (sku) REFERENCES products (sku)
);
CREATE TABLE audit (
  id INT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  what VARCHAR(64) NOT NULL,
  at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP
);
CREATE TABLE a_referrals (
  id INT NOT NULL PRIMARY KEY,
  referrer INT NULL,
  CONSTRAINT fk_ref_customer FOREIGN KEY (referrer) REFERENCES customers (id) ON DELETE SET NULL
);
INSERT INTO customers (email, name, tier, balance, prefs, avatar, note) VALUES
 ('ann@example.com', 'Ann Øberg', 'gold', 120.50, '{"theme": "dark", "n": [1,2]}', UNHEX('00FF10807F5C27220D0A1A'), 'it''s "quoted"\\ and\nnewline'),
 ('bo@example.com', 'Bo 李', 'basic', 0, NULL, NULL, NULL),
 ('gone@example.com', 'Gone', 'basic', 0, NULL, NULL, NULL),
 ('cy@example.com', 'Cy', 'platinum', 99999.99, '[]', REPEAT(UNHEX('AB'), 3000), 'emoji 😀');
DELETE FROM customers WHERE email = 'gone@example.com';
INSERT INTO products VALUES ('SKU00001', 'Widget', 9.99, 120, '2024-02-29', 1), ('SKU00002', 'Gadget, large', 1234.00, NULL, NULL, 0);
INSERT INTO orders (customer_id, placed, status) VALUES (1, '2024-03-01 10:00:00.123', 'paid'), (2, '2024-03-02 11:30:00.000', 'new'), (4, '2024-03-03 12:00:00.999', 'shipped');
INSERT INTO order_lines VALUES (1, 1, 'SKU00001', 3), (1, 2, 'SKU00002', 1), (3, 1, 'SKU00001', 10);
INSERT INTO a_referrals VALUES (1, 1), (2, NULL);
CREATE VIEW order_totals AS SELECT o.id AS order_id, c.name, SUM(l.qty * p.price) AS total FROM orders o JOIN customers c ON c.id = o.customer_id JOIN order_lines l ON l.order_id = o.id JOIN products p ON p.sku = l.sku GROUP BY o.id, c.name;
CREATE TRIGGER orders_audit AFTER INSERT ON orders FOR EACH ROW INSERT INTO audit (what) VALUES (CONCAT('order ', NEW.id));
INSERT INTO orders (customer_id, placed) VALUES (2, '2024-04-01 09:00:00.000');
