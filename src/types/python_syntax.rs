//! Whether a fix's check is a Python expression that Python would compile: parsed by ruff's
//! parser (`compile`'s grammar) and then held to the rules `compile` applies after parsing
//! (`await` outside an async function, `yield` outside a function, a starred comprehension
//! target, ...) by ruff's semantic syntax checker. A check is one expression on its own, so
//! its only scopes are the lambdas and comprehensions inside it.

use std::cell::RefCell;

use rustpython_ruff_python_ast::visitor::{Visitor, walk_comprehension, walk_expr};
use rustpython_ruff_python_ast::{Comprehension, Expr, PythonVersion};
use rustpython_ruff_python_parser::semantic_errors::{
    LazyImportContext, SemanticSyntaxChecker, SemanticSyntaxContext, SemanticSyntaxError,
    SemanticSyntaxErrorKind,
};

/// The Python whose rules a check is held to: the default recipe's base image's.
const PYTHON: PythonVersion = PythonVersion::PY312;

/// Why `source` is not a Python expression `compile(source, ..., 'eval')` takes, with the
/// column where the error starts; `None` when it is one.
pub fn error(source: &str) -> Option<String> {
    let column = |offset: u32| offset + 1;
    let parsed = match rustpython_ruff_python_parser::parse_expression(source) {
        Ok(parsed) => parsed,
        Err(error) => {
            let at = column(error.location.start().into());
            return Some(format!("{} (column {at})", error.error));
        }
    };
    let mut walk = Walk {
        source,
        checker: SemanticSyntaxChecker::new(),
        scopes: Vec::new(),
        errors: RefCell::new(Vec::new()),
    };
    walk.visit_expr(parsed.expr());
    let first = walk.errors.into_inner().into_iter().next()?;
    Some(format!(
        "{first} (column {})",
        column(first.range.start().into())
    ))
}

/// A scope a check can open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    Lambda,
    Comprehension,
    Generator,
}

/// The walk over a check's expressions, which the checker asks where it is.
struct Walk<'a> {
    source: &'a str,
    checker: SemanticSyntaxChecker,
    scopes: Vec<Scope>,
    errors: RefCell<Vec<SemanticSyntaxError>>,
}

impl<'a> Visitor<'a> for Walk<'_> {
    fn visit_expr(&mut self, expr: &'a Expr) {
        let mut checker = std::mem::take(&mut self.checker);
        checker.visit_expr(expr, self);
        self.checker = checker;
        let scope = match expr {
            Expr::Lambda(_) => Some(Scope::Lambda),
            Expr::ListComp(_) | Expr::SetComp(_) | Expr::DictComp(_) => Some(Scope::Comprehension),
            Expr::Generator(_) => Some(Scope::Generator),
            _ => None,
        };
        self.scopes.extend(scope);
        walk_expr(self, expr);
        if scope.is_some() {
            self.scopes.pop();
        }
    }

    // `compile` refuses `for *x in ...` in a comprehension as it does in a `for` statement;
    // the checker looks at the statement only.
    fn visit_comprehension(&mut self, comprehension: &'a Comprehension) {
        if let Expr::Starred(starred) = &comprehension.target {
            self.report_semantic_error(SemanticSyntaxError {
                kind: SemanticSyntaxErrorKind::InvalidStarExpression,
                range: starred.range,
                python_version: PYTHON,
            });
        }
        walk_comprehension(self, comprehension);
    }
}

impl SemanticSyntaxContext for Walk<'_> {
    fn future_annotations_or_stub(&self) -> bool {
        false
    }
    fn lazy_import_context(&self) -> Option<LazyImportContext> {
        None
    }
    fn python_version(&self) -> PythonVersion {
        PYTHON
    }
    fn source(&self) -> &str {
        self.source
    }
    fn global(&self, _: &str) -> Option<rustpython_ruff_text_size::TextRange> {
        None
    }
    fn has_nonlocal_binding(&self, _: &str) -> bool {
        false
    }
    // No check is inside an async function, and a lambda cannot be one.
    fn in_async_context(&self) -> bool {
        false
    }
    fn in_await_allowed_context(&self) -> bool {
        self.scopes.contains(&Scope::Lambda)
    }
    fn in_yield_allowed_context(&self) -> bool {
        self.scopes.last() == Some(&Scope::Lambda)
    }
    fn in_sync_comprehension(&self) -> bool {
        self.scopes
            .iter()
            .any(|scope| matches!(scope, Scope::Comprehension | Scope::Generator))
    }
    fn in_module_scope(&self) -> bool {
        self.scopes.is_empty()
    }
    fn in_function_scope(&self) -> bool {
        self.scopes.last() == Some(&Scope::Lambda)
    }
    fn in_generator_context(&self) -> bool {
        self.scopes.contains(&Scope::Generator)
    }
    fn in_notebook(&self) -> bool {
        false
    }
    fn report_semantic_error(&self, error: SemanticSyntaxError) {
        self.errors.borrow_mut().push(error);
    }
    fn in_loop_context(&self) -> bool {
        false
    }
    fn is_bound_parameter(&self, _: &str) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use crate::types::python::PythonExpr;

    /// Expressions Python refuses only after parsing, or that are close to it.
    const HAND_MADE: &[&str] = &[
        "1 if x else",
        "(lambda: 1)()",
        "[x for x in y if x]",
        "f(x for x in y)",
        "f(x for x in y, 1)",
        "a := 1",
        "(a := 1)",
        "x = 1",
        "import os",
        "not",
        "a not in b",
        "a is not b",
        "a <> b",
        "print 'x'",
        "{1: 2, **d}",
        "*a",
        "f(*a, **k)",
        "await x",
        "yield x",
        "lambda x: (yield)",
        "'a' 'b'",
        "0777",
        "1_000",
        "1__0",
        "x[1:2, ::3]",
        "x.1",
        "f'{x!r:>{w}}'",
        "f'{'",
        "True = 1",
        "del x",
        "(yield x)",
        "[(yield) for x in y]",
        "lambda: await x",
        "[x async for x in y]",
        "f(a=1, a=2)",
        "lambda a, a: 1",
        "[i := 0 for i in x]",
        "f(**k, *a)",
        "{**a for a in b}",
        "(f() := 1)",
        "[*a, *b]",
        "print(*a, sep='')",
        "x if y",
        "__debug__",
        "(__debug__ := 1)",
        "lambda *, a: a",
        "lambda *: 1",
        "f(x=1, *a)",
        "[x for x in *a]",
        "{*a}",
        "a[*b]",
    ];

    /// The checks of the default recipe.
    fn default_checks() -> Vec<String> {
        let pins = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/pins.toml"))
            .expect("the default recipe");
        pins.lines()
            .filter_map(|line| line.strip_prefix("check = \""))
            .map(|rest| rest.trim_end().trim_end_matches('"').to_owned())
            .collect()
    }

    /// Every check, the hand-made cases, and every variant of a check with one character taken
    /// out or one put in: those a check's value may hold.
    fn cases(checks: &[String]) -> Vec<String> {
        let mut cases: Vec<String> = checks.to_vec();
        cases.extend(HAND_MADE.iter().map(|case| (*case).to_owned()));
        for check in checks {
            let chars: Vec<char> = check.chars().collect();
            for at in 0..chars.len() {
                let mut without = chars.clone();
                without.remove(at);
                cases.push(without.into_iter().collect());
                for extra in ['(', ')', ':', ',', '\'', ' ', '=', '*', '[', ']', '.'] {
                    let mut with = chars.clone();
                    with.insert(at, extra);
                    cases.push(with.into_iter().collect());
                }
            }
        }
        cases.retain(|case| {
            !case.trim().is_empty() && crate::types::dockerfile::fits_double_quotes(case)
        });
        cases
    }

    /// Whether the machine's python3 compiles each case as an expression.
    fn python_compiles(cases: &[String]) -> Vec<bool> {
        let program = "import json, sys\n\
            def ok(source):\n\
            \ttry:\n\
            \t\tcompile(source, '<check>', 'eval')\n\
            \t\treturn True\n\
            \texcept SyntaxError:\n\
            \t\treturn False\n\
            print(json.dumps([ok(case) for case in json.load(sys.stdin)]))\n";
        let mut python = std::process::Command::new("python3")
            .args(["-c", program])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("python3 runs (ci/test installs it)");
        let input = serde_json::to_vec(cases).unwrap();
        std::io::Write::write_all(python.stdin.as_mut().unwrap(), &input).unwrap();
        drop(python.stdin.take());
        let output = python.wait_with_output().unwrap();
        assert!(output.status.success());
        let verdicts: Vec<bool> = serde_json::from_slice(&output.stdout).unwrap();
        assert_eq!(verdicts.len(), cases.len());
        verdicts
    }

    /// Python itself is the judge of what is a Python expression: every check of the default
    /// recipe, and every variant of one with a character taken out or put in, gets the same
    /// verdict from `PythonExpr` as from `compile(..., 'eval')` of the machine's python3.
    #[test]
    fn checks_compile_as_python_compiles_them() {
        let checks = default_checks();
        assert!(checks.len() >= 8, "{checks:?}");
        let cases = cases(&checks);
        let verdicts = python_compiles(&cases);
        let disagreements: Vec<String> = cases
            .iter()
            .zip(&verdicts)
            .filter(|(case, python)| case.parse::<PythonExpr>().is_ok() != **python)
            .map(|(case, python)| format!("{case:?}: python says {python}"))
            .collect();
        assert!(
            disagreements.is_empty(),
            "{} of {} cases disagree:\n{}",
            disagreements.len(),
            cases.len(),
            disagreements.join("\n")
        );
        assert!(verdicts.iter().filter(|ok| !**ok).count() > 100);
    }
}
