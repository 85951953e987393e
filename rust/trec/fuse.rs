//! The fused run of parsed run files, straight into the lines of the fused run, without a Python
//! object per line: what `rankfusion fuse` runs when it needs no Python run objects.
//!
//! The result is, byte for byte, what `rankfusion.trec` writes for `fuse(runs, ...)` of the same
//! files read by `read_run`, then `write_run`:
//! - queries in order of first appearance in the first file, then the queries only the second
//!   file has, and so on ([`QueryTable`]);
//! - each query fused by the engine (the code `rankfusion.rrf` runs) over the runs' doc ids, one
//!   list per file in the order of the files, an empty list where a file lacks the query. Doc ids
//!   are byte ranges of the files: two are the same key when their bytes are (what equality of
//!   the `surrogateescape`-decoded strings means);
//! - lines written by [`super::write::push_line`].
//!
//! Errors are values: the first failing query in query order, located [`At::Qid`], naming the
//! key's bytes.

use std::ops::Range;

use foldhash::fast::FixedState;
use hashbrown::HashMap;
use rayon::prelude::*;

use super::write::push_line;
use super::{py_str_cmp, RunQuery};
use crate::cancel::Cancel;
use crate::error::{At, Error, Key};
use crate::fusion::{params, Caller, Firsts, Fusion, Interned, Interner, Plan, Workspace};
use crate::pool;

/// One parsed run file: its bytes and its queries (byte ranges of `data`), as
/// [`super::parse_run`] returns them.
#[derive(Clone, Copy, Debug)]
pub struct RunFile<'a> {
    pub data: &'a [u8],
    pub queries: &'a [RunQuery],
}

impl<'a> RunFile<'a> {
    fn bytes(&self, span: &Range<usize>) -> &'a [u8] {
        &self.data[span.clone()]
    }
}

/// Which query of which file each fused query is: rows of one entry per file, `None` where the
/// file lacks the query.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueryTable {
    n_files: usize,
    rows: Vec<Option<usize>>,
}

impl QueryTable {
    /// The fused queries of `files`: in order of first appearance in `files[0]`, then the
    /// queries only `files[1]` has, and so on.
    pub fn new(files: &[RunFile<'_>]) -> Self {
        let n_files = files.len();
        let mut index: HashMap<&[u8], usize, FixedState> =
            HashMap::with_hasher(FixedState::default());
        let mut rows: Vec<Option<usize>> = Vec::new();
        for (f, file) in files.iter().enumerate() {
            for (q, query) in file.queries.iter().enumerate() {
                let next = index.len();
                let row = *index.entry(file.bytes(&query.qid)).or_insert(next);
                if row == next {
                    rows.resize(rows.len() + n_files, None);
                }
                rows[row * n_files + f] = Some(q);
            }
        }
        QueryTable { n_files, rows }
    }

    pub fn len(&self) -> usize {
        self.rows.len().checked_div(self.n_files).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Per file, the index of fused query `i` among the file's queries (`None`: it lacks it).
    pub fn row(&self, i: usize) -> &[Option<usize>] {
        &self.rows[i * self.n_files..(i + 1) * self.n_files]
    }

    /// The id of fused query `i`: its bytes in the first file that has it.
    fn qid<'a>(&self, files: &[RunFile<'a>], i: usize) -> &'a [u8] {
        self.row(i)
            .iter()
            .zip(files)
            .find_map(|(q, file)| q.map(|q| file.bytes(&file.queries[q].qid)))
            .unwrap_or_default()
    }
}

/// Orders tied doc ids with `tie_break="key"` as Python orders their decoded text.
struct ByDocId<'a>(&'a [&'a [&'a [u8]]]);

impl Caller<Error> for ByDocId<'_> {
    fn orders_ties(&self) -> bool {
        true
    }

    fn order_ties(&mut self, group: &mut [u32], firsts: &Firsts<'_>) -> Result<(), Error> {
        let id = |key: u32| {
            let (list, position) = firsts.get(key);
            self.0[list as usize][position as usize]
        };
        group.sort_by(|&a, &b| py_str_cmp(id(a), id(b)));
        Ok(())
    }
}

/// Fuses query `i` of `table` and appends its lines to `out`.
#[allow(clippy::too_many_arguments)]
fn fuse_query(
    ws: &mut Workspace,
    files: &[RunFile<'_>],
    table: &QueryTable,
    i: usize,
    plan: &Plan,
    tag: &[u8],
    out: &mut Vec<u8>,
    cancel: &Cancel<'_>,
) -> Result<(), Error> {
    cancel.check()?;
    // Items past the window are never read: they are left out of the lists.
    let lists: Vec<Vec<&[u8]>> = table
        .row(i)
        .iter()
        .zip(files)
        .enumerate()
        .map(|(l, (q, file))| match q {
            Some(q) => {
                let docids = &file.queries[*q].docids;
                let n = plan.read_len(l, docids.len());
                docids[..n].iter().map(|d| file.bytes(d)).collect()
            }
            None => Vec::new(),
        })
        .collect();
    let slices: Vec<&[&[u8]]> = lists.iter().map(Vec::as_slice).collect();
    let lens: Vec<usize> = slices.iter().map(|l| l.len()).collect();
    let qid = table.qid(files, i);
    // A score-based method reads the runs' scores: each must be finite, every line of every run
    // checked in order (as `fuse(..., scores=...)` checks them).
    let scores: Vec<Option<&[f64]>> = if plan.reads_scores() {
        let scores: Vec<Option<&[f64]>> = table
            .row(i)
            .iter()
            .zip(files)
            .map(|(q, file)| Some(q.map_or(&[][..], |q| &file.queries[q].scores[..])))
            .collect();
        for (l, s) in scores.iter().enumerate() {
            for (j, &x) in s.unwrap_or_default().iter().enumerate() {
                params::raw_score(x, true, l, j).map_err(|e| e.at(At::Qid(qid.to_vec())))?;
            }
        }
        scores
    } else {
        Vec::new()
    };
    let mut interner = Interner::new(&slices);
    ws.run(
        plan,
        &mut Interned::new(&lens, |l, p, next| {
            Ok::<_, Error>(interner.intern(l, p, next))
        }),
        &scores,
        &mut ByDocId(&slices),
        cancel,
    )
    .map_err(|e| {
        e.with_key(|l, p| Some(Key::Bytes(slices[l][p].to_vec())))
            .at(At::Qid(qid.to_vec()))
    })?;
    out.reserve(ws.page().len() * (qid.len() + tag.len() + 48));
    for (rank, &id) in ws.page().iter().enumerate() {
        push_line(
            out,
            qid,
            interner.key(ws.first_seen(id)),
            rank + 1,
            ws.score(id),
            tag,
        );
    }
    Ok(())
}

/// The plan of `fusion` for `n_runs` run files, which hold no boost values (a `boost_weight`
/// is refused).
pub fn plan(fusion: &Fusion, n_runs: usize) -> Result<Plan, Error> {
    let plan = fusion.plan(n_runs)?;
    fusion.check_boost(false)?;
    Ok(plan)
}

/// The fused run of `files` as TREC lines, every query fused with `plan` (one weight per file;
/// ties by first appearance) and tagged `tag`. `parallel`: the queries are fused on the current
/// rayon pool (the output is the same either way). `cancel` is polled between queries and
/// inside large ones (`Problem::Interrupted`).
pub fn fused_run(
    files: &[RunFile<'_>],
    plan: &Plan,
    tag: &[u8],
    parallel: bool,
    cancel: &Cancel<'_>,
) -> Result<Vec<u8>, Error> {
    let table = QueryTable::new(files);
    // Every contribution a query can count, computed once.
    let longest: Vec<usize> = files
        .iter()
        .map(|f| f.queries.iter().map(|q| q.docids.len()).max().unwrap_or(0))
        .collect();
    let plan = plan.clone().with_rank_terms(&longest);
    if !parallel || table.len() < 2 {
        let mut ws = Workspace::new(false);
        let mut out = Vec::new();
        for i in 0..table.len() {
            fuse_query(&mut ws, files, &table, i, &plan, tag, &mut out, cancel)?;
        }
        return Ok(out);
    }
    let parts: Vec<Result<Vec<u8>, Error>> = (0..table.len())
        .into_par_iter()
        .map_init(
            || Workspace::new(false),
            |ws, i| {
                let mut out = Vec::new();
                fuse_query(ws, files, &table, i, &plan, tag, &mut out, cancel).map(|()| out)
            },
        )
        .collect();
    cancel.check()?;
    let mut out = Vec::with_capacity(parts.iter().map(|p| p.as_ref().map_or(0, Vec::len)).sum());
    for part in parts {
        out.extend_from_slice(&part?);
    }
    Ok(out)
}

/// [`fused_run`] on this process's pool of the default size (see [`pool::run_cancellable`]).
pub fn fused_run_pooled(
    files: &[RunFile<'_>],
    plan: &Plan,
    tag: &[u8],
    cancel: &Cancel<'_>,
) -> Result<Vec<u8>, Error> {
    pool::run_cancellable(pool::resolve_threads(None), cancel, |parallel| {
        fused_run(files, plan, tag, parallel, cancel)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Problem;
    use crate::format as pyrepr;
    use crate::format::push_usize;
    use crate::fusion::Duplicates;
    use crate::trec::{parse_run, parse_score, Number, Order, ReadDuplicates};

    fn score(t: &[u8]) -> Option<f64> {
        match parse_score(t) {
            Number::Value(v) => Some(v),
            _ => None,
        }
    }

    fn parsed(texts: &[&[u8]], order: Order, dups: ReadDuplicates) -> Vec<Vec<RunQuery>> {
        texts
            .iter()
            .map(|t| parse_run(t, order, dups, score).unwrap())
            .collect()
    }

    fn files<'a>(texts: &[&'a [u8]], queries: &'a [Vec<RunQuery>]) -> Vec<RunFile<'a>> {
        texts
            .iter()
            .zip(queries)
            .map(|(data, q)| RunFile { data, queries: q })
            .collect()
    }

    fn fuse(texts: &[&[u8]], params: &Fusion, parallel: bool) -> Result<String, Error> {
        let q = parsed(texts, Order::Score, ReadDuplicates::Keep);
        let f = files(texts, &q);
        let plan = params.check_plan(texts.len())?;
        fused_run(&f, &plan, b"t", parallel, &Cancel::none()).map(|b| String::from_utf8(b).unwrap())
    }

    #[test]
    fn plans_refuse_a_boost_weight() {
        assert_eq!(plan(&Fusion::default(), 2).map(|p| p.n_lists()), Ok(2));
        let boosted = Fusion {
            boost_weight: Some(1.0),
            ..Fusion::default()
        };
        assert_eq!(
            plan(&boosted, 2).unwrap_err().argument(),
            Some("boost_weight")
        );
        let weighted = Fusion {
            weights: Some(vec![1.0]),
            boost_weight: Some(1.0),
            ..Fusion::default()
        };
        assert_eq!(plan(&weighted, 2).unwrap_err().argument(), Some("weights"));
    }

    #[test]
    fn queries_in_first_appearance_order_across_files() {
        let a: &[u8] = b"2 Q0 x 1 3 s\n1 Q0 y 1 3 s\n";
        let b: &[u8] = b"3 Q0 z 1 1 s\n1 Q0 x 1 1 s\n";
        let q = parsed(&[a, b], Order::Score, ReadDuplicates::Keep);
        let f = files(&[a, b], &q);
        let table = QueryTable::new(&f);
        assert_eq!(table.len(), 3);
        assert_eq!(table.row(0), [Some(0), None]);
        assert_eq!(table.row(1), [Some(1), Some(1)]);
        assert_eq!(table.row(2), [None, Some(0)]);
        assert_eq!(table.qid(&f, 2), b"3");
        assert!(QueryTable::new(&[]).is_empty());
    }

    #[test]
    fn lines_scores_and_ties_as_rrf() {
        let a: &[u8] = b"q Q0 a 1 3 s\nq Q0 b 2 2 s\n";
        let b: &[u8] = b"q Q0 c 1 9 s\nq Q0 a 2 8 s\n";
        let out = fuse(&[a, b], &Fusion::default(), false).unwrap();
        let ab = 0.0 + 1.0 / 62.0 + 1.0 / 61.0;
        let mut expected = Vec::new();
        for (rank, (doc, s)) in [("a", ab), ("c", 1.0 / 61.0), ("b", 1.0 / 62.0)]
            .iter()
            .enumerate()
        {
            let mut line = format!("q Q0 {doc} {} ", rank + 1).into_bytes();
            pyrepr::push_float(&mut line, *s);
            line.extend_from_slice(b" t\n");
            expected.extend(line);
        }
        assert_eq!(out.as_bytes(), expected);
        assert!(out.starts_with("q Q0 a 1 0.03252247488101534 t\n"), "{out}");
    }

    #[test]
    fn missing_queries_windows_weights_limits_and_duplicates() {
        let a: &[u8] = b"1 Q0 a 1 3 s\n1 Q0 b 2 2 s\n1 Q0 a 3 1 s\n2 Q0 z 1 1 s\n";
        let b: &[u8] = b"1 Q0 b 1 5 s\n3 Q0 y 1 1 s\n";
        let p = Fusion {
            k: Some(1.0),
            weights: Some(vec![1.0, -0.5]),
            duplicates: Duplicates::Sum,
            ..Fusion::default()
        };
        let out = fuse(&[a, b], &p, false).unwrap();
        let lines: Vec<&str> = out.lines().collect();
        // query 1: a = 1/2 + 1/4 (sum), b = 1/3 - 0.5/2; then 2 (only a), then 3 (only b)
        assert_eq!(
            lines,
            [
                "1 Q0 a 1 0.75 t",
                "1 Q0 b 2 0.08333333333333331 t",
                "2 Q0 z 1 0.5 t",
                "3 Q0 y 1 -0.25 t",
            ]
        );
        let windowed = Fusion {
            window: Some(1),
            limit: Some(1),
            ..p.clone()
        };
        let out = fuse(&[a, b], &windowed, true).unwrap();
        assert_eq!(
            out.lines().collect::<Vec<_>>(),
            ["1 Q0 a 1 0.5 t", "2 Q0 z 1 0.5 t", "3 Q0 y 1 -0.25 t"]
        );
        // weight 0 and a cancelling weight: no line / a zero score
        let zero = Fusion {
            k: Some(1.0),
            weights: Some(vec![0.0, 1.0]),
            ..Fusion::default()
        };
        assert_eq!(
            fuse(&[a, b], &zero, false).unwrap(),
            "1 Q0 b 1 0.5 t\n3 Q0 y 1 0.5 t\n"
        );
        let cancel: &[u8] = b"1 Q0 a 1 1 s\n";
        let opposite = Fusion {
            weights: Some(vec![1.0, -1.0]),
            ..Fusion::default()
        };
        assert_eq!(
            fuse(&[cancel, cancel], &opposite, false).unwrap(),
            "1 Q0 a 1 0.0 t\n"
        );
    }

    #[test]
    fn parallel_and_sequential_agree() {
        let mut a = Vec::new();
        let mut b = Vec::new();
        for q in 0..40 {
            for d in 0..30 {
                a.extend_from_slice(
                    format!("{q} Q0 d{} {d} {} s\n", (d * 7 + q) % 50, 100 - d).as_bytes(),
                );
                b.extend_from_slice(
                    format!("{} Q0 d{} {d} {} s\n", q + 3, (d * 3) % 50, 50 - d).as_bytes(),
                );
            }
        }
        let p = Fusion {
            limit: Some(20),
            ..Fusion::default()
        };
        let one = fuse(&[&a, &b], &p, false).unwrap();
        let many = fuse(&[&a, &b], &p, true).unwrap();
        assert_eq!(one, many);
        assert_eq!(one.lines().count(), 43 * 20);
    }

    #[test]
    fn errors_name_the_first_failing_query_and_the_key() {
        let a: &[u8] = b"1 Q0 a 1 3 s\n2 Q0 b 1 3 s\n2 Q0 c 2 2 s\n";
        let p = Fusion {
            k: Some(0.0),
            weights: Some(vec![f64::MAX, f64::MAX]),
            ..Fusion::default()
        };
        for parallel in [false, true] {
            let e = fuse(&[a, a], &p, parallel).unwrap_err();
            assert_eq!(e.at, At::Qid(b"1".to_vec()));
            assert!(matches!(e.problem, Problem::NonFiniteScore { .. }), "{e:?}");
            assert_eq!(
                e.key().and_then(|k| k.key.clone()),
                Some(Key::Bytes(b"a".to_vec()))
            );
        }
        // a score Rust's formatter would write otherwise
        let big: &[u8] = b"1 Q0 a 1 3 s\n";
        let p = Fusion {
            k: Some(0.0),
            weights: Some(vec![1e22]),
            ..Fusion::default()
        };
        assert_eq!(fuse(&[big], &p, false).unwrap(), "1 Q0 a 1 1e+22 t\n");
    }

    #[test]
    fn odd_bytes_are_copied() {
        let a: &[u8] = b"q\xff Q0 d\xe9\x80 1 1 s\nq\xff Q0 \xc3\xa9 2 1 s\n";
        let out = {
            let q = parsed(&[a], Order::File, ReadDuplicates::Keep);
            let f = files(&[a], &q);
            let plan = Fusion::default().check_plan(1).unwrap();
            fused_run(&f, &plan, b"t\xfe", false, &Cancel::none()).unwrap()
        };
        assert_eq!(
            out,
            b"q\xff Q0 d\xe9\x80 1 0.01639344262295082 t\xfe\nq\xff Q0 \xc3\xa9 2 0.016129032258064516 t\xfe\n"
        );
    }

    #[test]
    fn digits() {
        for n in [0usize, 7, 10, 999, 1000, usize::MAX] {
            let mut out = Vec::new();
            push_usize(&mut out, n);
            assert_eq!(out, n.to_string().into_bytes());
        }
    }
}
