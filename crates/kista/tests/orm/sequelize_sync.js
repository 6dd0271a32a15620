// Sequelize (npm's, on mysql2) as its users start: sync() of models with its default
// associations (every foreign key ON UPDATE CASCADE, belongsTo ON DELETE SET NULL,
// belongsToMany's join table ON DELETE CASCADE), rows through the ORM, a many-to-many
// include (a nested join in parentheses), a key change cascading, then sync({ alter: true })
// of changed models. Prints "sequelize ok" at the end; any failure exits non-zero.
//
// Run by crates/kista/tests/sql.rs (sql/orm_clients.rs installs Sequelize): node
// sequelize_sync.js PORT NODE_MODULES
const assert = require("assert");
const path = require("path");

const port = Number(process.argv[2]);
// The node_modules the test installed Sequelize and mysql2 into.
const { Sequelize, DataTypes } = require(path.join(process.argv[3], "sequelize"));
const connect = (database) =>
  new Sequelize(database, "root", "", {
    host: "127.0.0.1",
    port,
    dialect: "mysql",
    logging: false,
  });

function define(sequelize, { wide }) {
  const User = sequelize.define("User", {
    name: { type: DataTypes.STRING(wide ? 120 : 40), allowNull: false },
  });
  const project = { title: DataTypes.STRING };
  if (wide) project.budget = { type: DataTypes.INTEGER, allowNull: true };
  const Project = sequelize.define("Project", project);
  const Role = sequelize.define("Role", { label: DataTypes.STRING(20) });
  User.hasMany(Project);
  Project.belongsTo(User);
  User.belongsToMany(Role, { through: "UserRoles" });
  Role.belongsToMany(User, { through: "UserRoles" });
  return { User, Project, Role };
}

async function main() {
  const server = connect("");
  await server.query("CREATE DATABASE seq");
  await server.close();

  let sequelize = connect("seq");
  let { User, Project, Role } = define(sequelize, { wide: false });
  await sequelize.sync();
  await sequelize.sync(); // a second sync finds every table there

  const ann = await User.create({ name: "ann" });
  const bo = await User.create({ name: "bo" });
  await Project.create({ title: "alpha", UserId: ann.id });
  await Project.create({ title: "beta", UserId: bo.id });
  const admin = await Role.create({ label: "admin" });
  const dev = await Role.create({ label: "dev" });
  await ann.addRoles([admin, dev]);

  // belongsToMany's include: LEFT OUTER JOIN (UserRoles INNER JOIN Roles ON ...) ON ...
  const users = await User.findAll({ include: Role, order: [["name", "ASC"]] });
  assert.deepStrictEqual(
    users.map((u) => [u.name, u.Roles.map((r) => r.label).sort()]),
    [["ann", ["admin", "dev"]], ["bo", []]],
  );
  const withProjects = await User.findAll({ include: Project, order: [["name", "ASC"]] });
  assert.deepStrictEqual(withProjects.map((u) => u.Projects.map((p) => p.title)), [["alpha"], ["beta"]]);

  // ON UPDATE CASCADE: a user's new id reaches its projects and roles.
  await User.update({ id: 100 }, { where: { id: ann.id } });
  assert.strictEqual((await Project.findOne({ where: { title: "alpha" } })).UserId, 100);
  assert.strictEqual((await sequelize.query("SELECT COUNT(*) AS n FROM UserRoles WHERE UserId = 100", { plain: true })).n, 2);
  // belongsTo's ON DELETE SET NULL, belongsToMany's ON DELETE CASCADE.
  await User.destroy({ where: { id: 100 } });
  assert.strictEqual((await Project.findOne({ where: { title: "alpha" } })).UserId, null);
  assert.strictEqual((await sequelize.query("SELECT COUNT(*) AS n FROM UserRoles", { plain: true })).n, 0);
  await assert.rejects(Project.create({ title: "orphan", UserId: 999 }), /foreign key constraint fails/);
  await sequelize.close();

  // The models change: a column widened, one added; sync({ alter: true }) alters the
  // tables in place of them, their foreign keys kept.
  sequelize = connect("seq");
  ({ User, Project, Role } = define(sequelize, { wide: true }));
  await sequelize.sync({ alter: true });
  await sequelize.sync({ alter: true });
  const long = "x".repeat(100);
  const cy = await User.create({ name: long });
  await Project.create({ title: "gamma", UserId: cy.id, budget: 5 });
  await assert.rejects(Project.create({ title: "orphan", UserId: 999 }), /foreign key constraint fails/);
  const [keys] = await sequelize.query(
    "SELECT TABLE_NAME, COLUMN_NAME, REFERENCED_TABLE_NAME FROM information_schema.KEY_COLUMN_USAGE " +
      "WHERE TABLE_SCHEMA = 'seq' AND REFERENCED_TABLE_NAME IS NOT NULL ORDER BY TABLE_NAME, COLUMN_NAME",
  );
  // Tables keep the names their models gave them, so each sync({ alter: true }) finds
  // the foreign keys it re-creates and adds no copy.
  const found = keys.map((k) => [k.TABLE_NAME, k.COLUMN_NAME, k.REFERENCED_TABLE_NAME].join(" "));
  assert.deepStrictEqual(found, ["Projects UserId Users", "UserRoles RoleId Roles", "UserRoles UserId Users"]);
  await sequelize.query("DROP DATABASE seq");
  await sequelize.close();
  console.log("sequelize ok");
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
