//! The toolchains of the clients tested in other languages than Python: Node's Sequelize
//! (npm), Go's GORM and go-sql-driver (the Go module proxy) and Java's Connector/J (Maven
//! Central), fetched from the package registries on first use into the test build's own
//! directory. Where a toolchain or a package cannot be had,
//! the test says why on its error output and is skipped (never passed silently).

use std::path::{Path, PathBuf};
use std::process::Command;

/// Where fetched packages and built programs are kept between runs.
fn cache_dir(name: &str) -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("orm-clients")
        .join(name)
}

/// Runs `command`, its output captured; the error output when it fails or cannot start.
fn run(command: &mut Command) -> Result<(), String> {
    match command.output() {
        Ok(output) if output.status.success() => Ok(()),
        Ok(output) => Err(format!(
            "{}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )),
        Err(error) => Err(error.to_string()),
    }
}

fn skipped(test: &str, why: &str) {
    eprintln!("SKIPPED {test}: {why}");
}

/// The `node_modules` holding `packages` (`name@version`), installed with npm once.
pub fn node_modules(test: &str, packages: &[&str]) -> Option<PathBuf> {
    let dir = cache_dir("node");
    let modules = dir.join("node_modules");
    let installed = packages.iter().all(|package| {
        let name = package.rsplit_once('@').map_or(*package, |(name, _)| name);
        modules.join(name).join("package.json").exists()
    });
    if installed {
        return Some(modules);
    }
    if let Err(why) = run(Command::new("node").arg("--version")) {
        skipped(
            test,
            &format!("no Node.js (scripts/test-all installs it): {why}"),
        );
        return None;
    }
    std::fs::create_dir_all(&dir).ok()?;
    let mut npm = Command::new("npm");
    npm.args([
        "install",
        "--no-audit",
        "--no-fund",
        "--loglevel=error",
        "--prefix",
    ])
    .arg(&dir)
    .args(packages);
    match run(&mut npm) {
        Ok(()) => Some(modules),
        Err(why) => {
            skipped(test, &format!("npm could not install {packages:?}: {why}"));
            None
        }
    }
}

/// The program built from the Go module in `source` (its go.mod and go.sum name every
/// module it needs, fetched through the Go module proxy).
pub fn go_program(test: &str, source: &Path, name: &str) -> Option<PathBuf> {
    let program = cache_dir("go").join(name);
    if let Err(why) = run(Command::new("go").arg("version")) {
        skipped(
            test,
            &format!("no Go toolchain (scripts/test-all installs one): {why}"),
        );
        return None;
    }
    let mut build = Command::new("go");
    build
        .current_dir(source)
        .env("GOFLAGS", "-mod=readonly")
        .args(["build", "-o"])
        .arg(&program)
        .arg(".");
    match run(&mut build) {
        Ok(()) => Some(program),
        Err(why) => {
            skipped(
                test,
                &format!("go build of {} failed: {why}", source.display()),
            );
            None
        }
    }
}

/// The jar of Maven artifact `coordinates` (`group:artifact:version`, without its
/// dependencies), fetched with `mvn` once.
pub fn maven_jar(test: &str, coordinates: &str) -> Option<PathBuf> {
    let dir = cache_dir("maven");
    let mut parts = coordinates.split(':');
    let (_, artifact, version) = (parts.next()?, parts.next()?, parts.next()?);
    let jar = dir.join(format!("{artifact}-{version}.jar"));
    if jar.exists() {
        return Some(jar);
    }
    if let Err(why) = run(Command::new("java").arg("-version")) {
        skipped(
            test,
            &format!("no Java (scripts/test-all installs it): {why}"),
        );
        return None;
    }
    let mut fetch = Command::new("mvn");
    fetch
        .args(["-q", "dependency:copy"])
        .arg(format!("-Dartifact={coordinates}"))
        .arg(format!("-DoutputDirectory={}", dir.display()));
    match run(&mut fetch) {
        Ok(()) if jar.exists() => Some(jar),
        Ok(()) => {
            skipped(test, &format!("mvn fetched no {}", jar.display()));
            None
        }
        Err(why) => {
            skipped(test, &format!("mvn could not fetch {coordinates}: {why}"));
            None
        }
    }
}
