//! `cfeval pack check|list`: load and check specialty packs.

use std::io::Write;
use std::path::Path;

use cfeval_schema::pack::{Pack, task_name};
use cfeval_schema::vocab::TaskKind;

use crate::args::{PackArgs, PackCommand};

/// Every problem of the pack in `dir` (empty: the pack is sound), after
/// its manifest and vocabulary loaded: the catalog's, and those of the
/// files its task reads.
pub fn problems(pack: &Pack) -> Vec<String> {
    let mut out = Vec::new();
    let catalog = pack.catalog_path();
    match crate::pipeline::check_catalog(&catalog) {
        Ok(diagnostics) => out.extend(
            diagnostics
                .iter()
                .map(|diagnostic| format!("{}:{diagnostic}", catalog.display())),
        ),
        Err(error) => out.push(format!("{}: {error:#}", catalog.display())),
    }
    let judge_prompt = pack.file("prompts/judge_pair.md");
    if judge_prompt.is_file()
        && let Err(error) = cfeval_judge::llm::PairPrompt::load(&judge_prompt)
    {
        out.push(error.to_string());
    }
    if pack.task == TaskKind::Diagnosis {
        if let Err(error) = cfeval_diagnosis::findings::Lexicon::load(&pack.dir) {
            out.push(error.to_string());
        }
        if let Err(error) = cfeval_diagnosis::answer::Reader::load(&pack.dir) {
            out.push(error.to_string());
        }
        if let Err(error) = cfeval_infer::Prompts::from_pack(pack) {
            out.push(error);
        }
    }
    out
}

fn describe(pack: &Pack) -> String {
    format!(
        "{} v{} ({}) {} blake3={}",
        pack.name,
        pack.version,
        task_name(pack.task),
        pack.dir.display(),
        pack.hash()
    )
}

fn check(dir: &Path, out: &mut dyn Write) -> anyhow::Result<bool> {
    let pack = match Pack::load(dir) {
        Ok(pack) => pack,
        Err(error) => {
            writeln!(out, "{error}")?;
            return Ok(false);
        }
    };
    let problems = problems(&pack);
    if problems.is_empty() {
        writeln!(out, "ok {}", describe(&pack))?;
        return Ok(true);
    }
    for problem in &problems {
        writeln!(out, "{problem}")?;
    }
    Ok(false)
}

/// `cfeval pack …`.
pub fn pack(args: &PackArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    match &args.command {
        PackCommand::Check { dir } => {
            if !check(dir, out)? {
                anyhow::bail!("pack {} has problems (listed above)", dir.display());
            }
            Ok(())
        }
        PackCommand::List { root } => {
            let mut bad = 0;
            let listed = Pack::list(root).map_err(anyhow::Error::msg)?;
            if listed.is_empty() {
                anyhow::bail!(
                    "{} holds no pack (no sub-folder with a pack.yaml)",
                    root.display()
                );
            }
            for loaded in listed {
                match loaded {
                    Ok(pack) => {
                        let problems = problems(&pack);
                        if problems.is_empty() {
                            writeln!(out, "{}", describe(&pack))?;
                        } else {
                            bad += 1;
                            writeln!(
                                out,
                                "{} — {} problem(s): {}",
                                describe(&pack),
                                problems.len(),
                                problems[0]
                            )?;
                        }
                    }
                    Err(error) => {
                        bad += 1;
                        writeln!(out, "{error}")?;
                    }
                }
            }
            if bad > 0 {
                anyhow::bail!("{bad} pack(s) in {} have problems", root.display());
            }
            Ok(())
        }
    }
}
