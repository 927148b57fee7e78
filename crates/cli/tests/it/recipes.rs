//! The scheduler recipes run: the command line of `deploy/slurm/sweep.sbatch`
//! (an array job) and of `deploy/k8s/sweep.yaml` (an Indexed Job), each run
//! as its scheduler would run it — as 8 concurrent processes with the array
//! task id or the completion index set — on one run folder, end with the
//! one-process run's tables, and make no more subject calls than it (a chart
//! two interventions share, answered by two slices at the same moment, may
//! cost one call more).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Child, Command, Stdio};

use crate::driver::{
    Clean, RULE_JUDGE, SUBJECT_MODEL, assert_same_tables, chart_counts, clean_run, tables, verdict_server,
    write_pipeline,
};
use crate::support::{succeeded, workspace_root};
use cfeval_model::testing::BackgroundServer;

/// Waits for every process; each must succeed.
fn wait_all(children: Vec<Child>, what: &str) -> Vec<String> {
    children
        .into_iter()
        .enumerate()
        .map(|(index, child)| {
            succeeded(
                child.wait_with_output().expect("wait"),
                &format!("{what} process {index}"),
            )
        })
        .collect()
}

/// The sharded run equals the clean one; its calls are bounded as the
/// module docs say.
fn check(server: &BackgroundServer, clean: &Clean, run: &Path, before: u64, outputs: &[String], what: &str) {
    let judged = outputs
        .iter()
        .filter(|stdout| stdout.contains("4 judge rule") && stdout.contains("5 aggregate"))
        .count();
    assert!(
        judged >= 1,
        "{what}: one process judged and aggregated: {outputs:?}"
    );
    let (applicable, distinct) = chart_counts(run);
    let calls = server.requests_for_model(SUBJECT_MODEL) - before;
    assert!(
        calls >= clean.calls && calls <= clean.calls + (applicable - distinct),
        "{what}: {calls} subject calls, {} in one process",
        clean.calls
    );
    assert_same_tables(&clean.tables, &tables(run), what);
}

fn base_command(program: &str, cwd: &Path) -> Command {
    let mut command = Command::new(program);
    command
        .current_dir(cwd)
        .env("CFEVAL_BIN", env!("CARGO_BIN_EXE_cfeval"))
        .env("CFEVAL_PROGRESS", "plain")
        .env_remove("RUST_LOG")
        .env_remove("VLLM_API_KEY")
        .env_remove("VLLM_BASE_URL")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

#[test]
fn the_slurm_array_recipe_gives_the_one_process_run() {
    let recipe = workspace_root().join("deploy/slurm/sweep.sbatch");
    let text = std::fs::read_to_string(&recipe).expect("recipe");
    let array = text
        .lines()
        .find_map(|line| line.strip_prefix("#SBATCH --array="))
        .expect("an #SBATCH --array line");
    let (first, last) = array.split_once('-').expect("a range");
    let (first, last): (u32, u32) = (first.parse().expect("first"), last.parse().expect("last"));
    let count = last - first + 1;
    assert_eq!(count, 8, "the recipe's default array is 8 tasks");
    let server = verdict_server();
    let clean = clean_run(&server);
    let dir = tempfile::tempdir().expect("tempdir");
    let pipeline = write_pipeline(dir.path(), &server.openai_base_url(), RULE_JUDGE);
    let run = dir.path().join("runs/driver");
    let before = server.requests_for_model(SUBJECT_MODEL);
    let children = (first..=last)
        .map(|task| {
            base_command("bash", dir.path())
                .arg(&recipe)
                .env("CFEVAL_PIPELINE", &pipeline)
                .env("CFEVAL_RUN_DIR", "runs/driver")
                .env("SLURM_ARRAY_TASK_ID", task.to_string())
                .env("SLURM_ARRAY_TASK_MIN", first.to_string())
                .env("SLURM_ARRAY_TASK_COUNT", count.to_string())
                .spawn()
                .expect("spawn")
        })
        .collect();
    let outputs = wait_all(children, "slurm");
    check(&server, &clean, &run, before, &outputs, "slurm array");
}

#[test]
fn the_kubernetes_indexed_job_recipe_gives_the_one_process_run() {
    let recipe = workspace_root().join("deploy/k8s/sweep.yaml");
    let job: serde_norway::Value =
        serde_norway::from_str(&std::fs::read_to_string(&recipe).expect("recipe")).expect("yaml");
    assert_eq!(job["kind"].as_str(), Some("Job"));
    assert_eq!(job["spec"]["completionMode"].as_str(), Some("Indexed"));
    let completions = job["spec"]["completions"].as_u64().expect("completions");
    assert_eq!(completions, 8);
    let container = &job["spec"]["template"]["spec"]["containers"][0];
    let command: Vec<String> = container["command"]
        .as_sequence()
        .expect("command")
        .iter()
        .map(|part| part.as_str().expect("text").to_string())
        .collect();
    let script = container["args"][0].as_str().expect("args").to_string();
    let env: BTreeMap<String, String> = container["env"]
        .as_sequence()
        .expect("env")
        .iter()
        .map(|entry| {
            (
                entry["name"].as_str().expect("name").to_string(),
                entry["value"].as_str().expect("value").to_string(),
            )
        })
        .collect();
    assert_eq!(
        env["CFEVAL_SHARDS"],
        completions.to_string(),
        "CFEVAL_SHARDS equals completions"
    );
    assert_eq!(job["spec"]["parallelism"].as_u64(), Some(completions));
    let server = verdict_server();
    let clean = clean_run(&server);
    let dir = tempfile::tempdir().expect("tempdir");
    let pipeline = write_pipeline(dir.path(), &server.openai_base_url(), RULE_JUDGE);
    let run = dir.path().join("runs/driver");
    let before = server.requests_for_model(SUBJECT_MODEL);
    let children = (0..completions)
        .map(|index| {
            let mut process = base_command(&command[0], dir.path());
            process.args(&command[1..]).arg(&script);
            for (name, value) in &env {
                process.env(name, value);
            }
            // The volume's paths, here.
            process
                .env("CFEVAL_PIPELINE", &pipeline)
                .env("CFEVAL_RUN_DIR", "runs/driver")
                .env("JOB_COMPLETION_INDEX", index.to_string())
                .spawn()
                .expect("spawn")
        })
        .collect();
    let outputs = wait_all(children, "k8s");
    check(&server, &clean, &run, before, &outputs, "k8s indexed job");
}
