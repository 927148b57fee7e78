//! `cfeval cache stats|verify|compact DIR`: look after a response cache
//! (`cfeval_model::cache_maintenance`). DIR is a cache directory or a run
//! directory (its `cache/`).

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use cfeval_model::cache_maintenance as maintain;
use clap::{Args, Subcommand};

#[derive(Debug, Args)]
pub struct CacheArgs {
    #[command(subcommand)]
    pub command: CacheCommand,
}

#[derive(Debug, Subcommand)]
pub enum CacheCommand {
    /// Files, segments, records, distinct keys and bytes of a cache.
    Stats(CacheDirArgs),
    /// Read every record and entry; print each damaged one with its file
    /// and byte offset and fail if there is any.
    Verify(CacheDirArgs),
    /// Rewrite a cache into few segments: one record per key, damaged
    /// records dropped, one-file entries moved in. Segments a running
    /// process is writing are left alone.
    Compact(CacheDirArgs),
}

#[derive(Debug, Args)]
pub struct CacheDirArgs {
    /// A cache directory, or a run directory (its `cache/`).
    pub dir: PathBuf,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// The cache directory `dir` names.
fn cache_dir(dir: &Path) -> anyhow::Result<PathBuf> {
    if !dir.is_dir() {
        bail!(
            "{} is not a directory (give a cache directory or a run directory)",
            dir.display()
        );
    }
    let nested = dir.join("cache");
    if !dir.join("packed").is_dir() && nested.is_dir() {
        return Ok(nested);
    }
    Ok(dir.to_path_buf())
}

fn json(out: &mut dyn Write, value: &impl serde::Serialize) -> anyhow::Result<()> {
    serde_json::to_writer_pretty(&mut *out, value)?;
    writeln!(out)?;
    Ok(())
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

pub fn cache(args: &CacheArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    match &args.command {
        CacheCommand::Stats(args) => {
            let dir = cache_dir(&args.dir)?;
            let stats = maintain::stats(&dir)
                .with_context(|| format!("failed to read the cache {}", dir.display()))?;
            if args.json {
                return json(out, &stats);
            }
            writeln!(out, "cache {}", dir.display())?;
            writeln!(out, "files: {} ({})", stats.files, mib(stats.bytes))?;
            writeln!(
                out,
                "segments: {} ({} sealed, {} being written, {} left unsealed by a writer that stopped), {}",
                stats.segments,
                stats.sealed_segments,
                stats.active_segments,
                stats.unsealed_segments,
                mib(stats.segment_bytes)
            )?;
            writeln!(
                out,
                "records: {}, distinct keys {}, older records of a key {}",
                stats.records, stats.keys, stats.duplicate_records
            )?;
            if stats.damaged_bytes + stats.torn_bytes > 0 {
                writeln!(
                    out,
                    "damaged: {} bytes skipped, {} bytes of torn tails (`cfeval cache verify` says where)",
                    stats.damaged_bytes, stats.torn_bytes
                )?;
            }
            if stats.file_entries > 0 {
                writeln!(
                    out,
                    "one-file entries (earlier layout): {} ({}); `cfeval cache compact` moves them into segments",
                    stats.file_entries,
                    mib(stats.file_entry_bytes)
                )?;
            }
            Ok(())
        }
        CacheCommand::Verify(args) => {
            let dir = cache_dir(&args.dir)?;
            let verified = maintain::verify(&dir)
                .with_context(|| format!("failed to read the cache {}", dir.display()))?;
            if args.json {
                json(out, &verified)?;
            } else {
                for problem in &verified.problems {
                    writeln!(out, "{problem}")?;
                }
                writeln!(
                    out,
                    "cache {}: {} records, {} one-file entries read; {} problem(s)",
                    dir.display(),
                    verified.records,
                    verified.file_entries,
                    verified.problems.len()
                )?;
            }
            if !verified.problems.is_empty() {
                bail!(
                    "the cache {} is damaged: {} problem(s); a damaged record is a miss (its call is made again); `cfeval cache compact` drops them",
                    dir.display(),
                    verified.problems.len()
                );
            }
            Ok(())
        }
        CacheCommand::Compact(args) => {
            let dir = cache_dir(&args.dir)?;
            let report = maintain::compact(&dir, true)
                .with_context(|| format!("failed to compact the cache {}", dir.display()))?;
            if args.json {
                return json(out, &report);
            }
            writeln!(
                out,
                "cache {}: {} files ({}) → {} files ({}); {} keys kept; {} segments rewritten, {} left to running writers; {} one-file entries moved in; {} older records and {} damaged ones dropped",
                dir.display(),
                report.files_before,
                mib(report.bytes_before),
                report.files_after,
                mib(report.bytes_after),
                report.keys,
                report.segments_rewritten,
                report.segments_left,
                report.file_entries_moved,
                report.duplicates_dropped,
                report.damaged_dropped
            )?;
            Ok(())
        }
    }
}
