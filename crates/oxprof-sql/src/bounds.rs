//! The shape of a statement, checked before anything is planned: how deeply it nests,
//! how many `UNION`/`INTERSECT`/`EXCEPT` terms a query chains, and how large its plan
//! would be once every common table expression (`WITH`) is expanded where it is used.
//!
//! DataFusion plans a CTE again at every reference, so `WITH a1 AS (… a0 … a0), a2 AS
//! (… a1 … a1), …` doubles the plan per line: a kilobyte of SQL is a plan of millions of
//! nodes. Deep trees (a chain of 2,500 `UNION ALL`s, `1+1+…+1`) recurse that deep in every
//! pass over them. The walk below stops as soon as a limit is passed, so it never goes
//! deeper than the limit itself; it charges each reference to a CTE with the CTE's expanded
//! size, so the doubling is seen before DataFusion does it.

use crate::SqlError;
use datafusion::sql::parser::{CopyToSource, Statement as DfStatement};
use datafusion::sql::sqlparser::ast::{Expr, ObjectName, Query, SetExpr, TableFactor, Visit, Visitor};
use std::collections::HashMap;
use std::ops::ControlFlow;

/// Limits on a statement's shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShapeLimits {
    /// Nesting of expressions, subqueries, set operations and parenthesised joins.
    pub max_depth: usize,
    /// `UNION`/`INTERSECT`/`EXCEPT` terms chained in one query.
    pub max_set_terms: usize,
    /// Nodes (expressions, relations, queries) of the plan, each CTE counted again
    /// wherever it is referenced.
    pub max_plan_nodes: u64,
}

impl Default for ShapeLimits {
    fn default() -> Self {
        ShapeLimits { max_depth: 128, max_set_terms: 512, max_plan_nodes: 50_000 }
    }
}

/// Checks `statement` against `limits`: `Err` with one line naming the limit passed.
pub fn check(statement: &DfStatement, limits: &ShapeLimits) -> Result<(), SqlError> {
    let mut walk = Walk { limits: *limits, depth: 0, frames: vec![Frame::default()], pending: HashMap::new() };
    let flow = match statement {
        DfStatement::Statement(s) => s.visit(&mut walk),
        DfStatement::Explain(explain) => return check(&explain.statement, limits),
        DfStatement::CopyTo(copy) => match &copy.source {
            CopyToSource::Query(q) => q.visit(&mut walk),
            CopyToSource::Relation(_) => ControlFlow::Continue(()),
        },
        DfStatement::CreateExternalTable(_) | DfStatement::Reset(_) => ControlFlow::Continue(()),
    };
    match flow {
        ControlFlow::Continue(()) => Ok(()),
        ControlFlow::Break(exceeded) => Err(SqlError::Sql(exceeded.message(limits))),
    }
}

/// Which limit a statement passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Exceeded {
    Depth,
    SetTerms(usize),
    PlanNodes,
}

impl Exceeded {
    fn message(self, limits: &ShapeLimits) -> String {
        match self {
            Exceeded::Depth => format!(
                "SQL nested too deeply: more than {} levels of expressions, subqueries or joins; write it \
                 flatter (e.g. `x IN (…)` instead of a chain of ORs)",
                limits.max_depth
            ),
            Exceeded::SetTerms(n) => format!(
                "SQL too large: {n} UNION/INTERSECT/EXCEPT terms in one query, at most {}; combine the rows \
                 another way (e.g. one SELECT with `IN (…)` or `VALUES`)",
                limits.max_set_terms
            ),
            Exceeded::PlanNodes => format!(
                "SQL too large to plan: more than {} plan nodes once each WITH table is expanded where it is \
                 used; reference WITH tables fewer times (each reference plans the table again)",
                limits.max_plan_nodes
            ),
        }
    }
}

/// One query being walked: its size so far and the CTEs its `WITH` defined.
#[derive(Default)]
struct Frame {
    /// Plan nodes, references to CTEs counted with the CTE's own size.
    nodes: u64,
    /// The CTE this query defines, if it is one.
    defines: Option<String>,
    /// CTE name → expanded size, for the CTEs of this query's `WITH` defined so far.
    ctes: Vec<(String, u64)>,
}

struct Walk {
    limits: ShapeLimits,
    depth: usize,
    /// The queries being walked, innermost last (the first is the statement itself).
    frames: Vec<Frame>,
    /// A `WITH`'s CTE queries (by address) → their names, until their walk begins.
    pending: HashMap<*const Query, String>,
}

impl Walk {
    fn enter(&mut self) -> ControlFlow<Exceeded> {
        self.depth += 1;
        if self.depth > self.limits.max_depth { ControlFlow::Break(Exceeded::Depth) } else { ControlFlow::Continue(()) }
    }

    fn add(&mut self, nodes: u64) -> ControlFlow<Exceeded> {
        let Some(frame) = self.frames.last_mut() else { return ControlFlow::Continue(()) };
        frame.nodes = frame.nodes.saturating_add(nodes);
        // Every frame's count ends up in the statement's, so the innermost one passing the
        // limit is enough to stop.
        if frame.nodes > self.limits.max_plan_nodes {
            ControlFlow::Break(Exceeded::PlanNodes)
        } else {
            ControlFlow::Continue(())
        }
    }

    /// The expanded size of the CTE `name` in scope (innermost definition), if any.
    fn cte(&self, name: &str) -> Option<u64> {
        self.frames.iter().rev().find_map(|f| f.ctes.iter().rev().find(|(n, _)| n == name).map(|(_, size)| *size))
    }
}

/// Terms of a query body's set operations, counted without recursion (the visitor
/// recurses into them afterwards, only once they are known to be few).
fn set_terms(body: &SetExpr) -> usize {
    let mut terms = 0usize;
    let mut stack = vec![body];
    while let Some(expr) = stack.pop() {
        match expr {
            SetExpr::SetOperation { left, right, .. } => {
                stack.push(left);
                stack.push(right);
            }
            _ => terms += 1,
        }
    }
    terms
}

fn relation_name(name: &ObjectName) -> String {
    name.0.last().map(|part| part.to_string().trim_matches('"').to_ascii_lowercase()).unwrap_or_default()
}

impl Visitor for Walk {
    type Break = Exceeded;

    fn pre_visit_query(&mut self, query: &Query) -> ControlFlow<Exceeded> {
        self.enter()?;
        // A chain of set operations is as deep as it has terms: the term limit bounds it
        // (a 500-term UNION ALL is ordinary and plans fine on the engine's stacks).
        let terms = set_terms(&query.body);
        if terms > self.limits.max_set_terms {
            return ControlFlow::Break(Exceeded::SetTerms(terms));
        }
        let defines = self.pending.remove(&(query as *const Query));
        self.frames.push(Frame { nodes: 1, defines, ctes: Vec::new() });
        if let Some(with) = &query.with {
            for cte in &with.cte_tables {
                let name = cte.alias.name.value.to_ascii_lowercase();
                self.pending.insert(&*cte.query as *const Query, name);
            }
        }
        ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, _query: &Query) -> ControlFlow<Exceeded> {
        self.depth = self.depth.saturating_sub(1);
        let Some(done) = self.frames.pop() else { return ControlFlow::Continue(()) };
        // A CTE's definition is planned once, and once more at each reference.
        if let (Some(name), Some(parent)) = (done.defines, self.frames.last_mut()) {
            parent.ctes.push((name, done.nodes));
        }
        self.add(done.nodes)
    }

    fn pre_visit_relation(&mut self, relation: &ObjectName) -> ControlFlow<Exceeded> {
        let size = self.cte(&relation_name(relation)).unwrap_or(1);
        self.add(size)
    }

    fn pre_visit_table_factor(&mut self, _factor: &TableFactor) -> ControlFlow<Exceeded> {
        self.enter()
    }

    fn post_visit_table_factor(&mut self, _factor: &TableFactor) -> ControlFlow<Exceeded> {
        self.depth = self.depth.saturating_sub(1);
        ControlFlow::Continue(())
    }

    fn pre_visit_expr(&mut self, _expr: &Expr) -> ControlFlow<Exceeded> {
        self.enter()?;
        self.add(1)
    }

    fn post_visit_expr(&mut self, _expr: &Expr) -> ControlFlow<Exceeded> {
        self.depth = self.depth.saturating_sub(1);
        ControlFlow::Continue(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::sql::parser::DFParser;

    fn shape(sql: &str) -> Result<(), String> {
        let mut statements = DFParser::parse_sql(sql).map_err(|e| e.to_string())?;
        let statement = statements.pop_front().ok_or("no statement")?;
        check(&statement, &ShapeLimits::default()).map_err(|e| e.to_string())
    }

    fn doubling(levels: usize) -> String {
        let mut ctes = vec!["a0 AS (SELECT 1 AS x)".to_string()];
        for i in 1..=levels {
            ctes.push(format!("a{i} AS (SELECT x FROM a{0} UNION ALL SELECT x FROM a{0})", i - 1));
        }
        format!("WITH {} SELECT count(*) FROM a{levels}", ctes.join(", "))
    }

    #[test]
    fn ordinary_queries_pass() {
        for sql in [
            "SELECT 1",
            "SELECT name, count(*) FROM slice WHERE dur > 10 AND name LIKE 'x%' GROUP BY name ORDER BY 2 DESC LIMIT 5",
            "WITH a AS (SELECT * FROM slice), b AS (SELECT * FROM a WHERE dur > 1) SELECT count(*) FROM a JOIN b ON a.id = b.id",
            "WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t WHERE n < 10) SELECT * FROM t",
            "EXPLAIN SELECT 1 UNION ALL SELECT 2",
            &doubling(8),
        ] {
            assert_eq!(shape(sql), Ok(()), "{sql}");
        }
    }

    #[test]
    fn wide_unions_deep_expressions_and_doubling_ctes_are_refused() {
        let union = format!("SELECT 1{}", " UNION ALL SELECT 1".repeat(2_499));
        let error = shape(&union).unwrap_err();
        assert!(error.contains("2500 UNION/INTERSECT/EXCEPT terms") && error.contains("at most 512"), "{error}");
        let deep = format!("SELECT 1{}", "+1".repeat(20_000));
        let error = shape(&deep).unwrap_err();
        assert!(error.contains("nested too deeply") && error.contains("128"), "{error}");
        let error = shape(&doubling(20)).unwrap_err();
        assert!(error.contains("too large to plan") && error.contains("50000"), "{error}");
        // Nested subqueries count too.
        let nested = format!("SELECT {}1{}", "(SELECT ".repeat(20), ")".repeat(20));
        assert!(shape(&nested).is_ok());
        let parens = format!("SELECT {}1{}", "(".repeat(200), ")".repeat(200));
        assert!(shape(&parens).is_err());
    }

    #[test]
    fn a_cte_shadowed_or_unused_counts_once() {
        // An inner WITH's name hides the outer one inside its query only.
        let sql = "WITH a AS (SELECT 1 AS x) SELECT * FROM (WITH a AS (SELECT 2 AS x) SELECT * FROM a) s, a";
        assert_eq!(shape(sql), Ok(()));
    }
}
