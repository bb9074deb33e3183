//! STUB: the lead's comparison (docs/JUDGE.md, "The expected trace and the comparison") replaces this
//! file; only its signature is the contract. This stand-in walks the graph with plain equality (and
//! `{"$any": ...}`), so the driver can be exercised end to end by hand.

use serde_json::Value;

/// The language of a divergence's message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    Zh,
    En,
    Both,
}

/// Compares a recorded trace with the expected graph (the "expected" object of docs/JUDGE.md, with its
/// "rules"). None: the trace is what the chapter asks for. Some(message): the first divergence, explained.
pub fn judge(expected: &Value, trace: &[Value], lang: Lang) -> Option<String> {
    let alternatives = expected["alternatives"].as_array()?;
    let mut best: Option<Divergence> = None;
    for alternative in alternatives {
        let steps = alternative["steps"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        match walk(steps, trace) {
            Ok(()) => return None,
            Err(divergence) => {
                if best.as_ref().is_none_or(|b| divergence.0 > b.0) {
                    best = Some(divergence);
                }
            }
        }
    }
    let Some((at, why, id)) = best else {
        return Some("no expected trace to compare with".to_string());
    };
    let rule = |id: &str| {
        let text = &expected["rules"][id];
        match lang {
            Lang::Zh => text["zh"].as_str().unwrap_or(id).to_string(),
            Lang::En => text["en"].as_str().unwrap_or(id).to_string(),
            Lang::Both => format!(
                "{} / {}",
                text["zh"].as_str().unwrap_or(id),
                text["en"].as_str().unwrap_or(id)
            ),
        }
    };
    Some(format!("step {at}: {why}\n  {}", rule(&id)))
}

/// Where the trace left the graph: the step's index, what happened, the rule of the expected step.
type Divergence = (usize, String, String);

/// Matches `trace` against one alternative; Err: the index of the first divergence and what it was.
fn walk(steps: &[Value], trace: &[Value]) -> Result<(), Divergence> {
    let mut matched = vec![false; steps.len()];
    for (at, step) in trace.iter().enumerate() {
        let enabled = |i: usize| {
            !matched[i]
                && steps[i]["after"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_u64)
                    .all(|p| matched.get(p as usize).copied().unwrap_or(false))
        };
        let found = (0..steps.len()).find(|&i| enabled(i) && fits(&steps[i]["match"], step));
        match found {
            Some(i) => matched[i] = true,
            None => {
                let wanted: Vec<String> = (0..steps.len())
                    .filter(|&i| enabled(i))
                    .map(|i| steps[i]["match"].to_string())
                    .collect();
                let rule = (0..steps.len())
                    .find(|&i| enabled(i))
                    .and_then(|i| steps[i]["rule"].as_str())
                    .unwrap_or("");
                let why = format!("expected one of {wanted:?}, got {step}");
                return Err((at, why, rule.to_string()));
            }
        }
    }
    match (0..steps.len()).find(|&i| !matched[i]) {
        None => Ok(()),
        Some(i) => Err((
            trace.len(),
            format!("the trace ended; still expected {}", steps[i]["match"]),
            steps[i]["rule"].as_str().unwrap_or("").to_string(),
        )),
    }
}

/// Plain equality, except that `{"$any": ...}` matches anything.
fn fits(wanted: &Value, got: &Value) -> bool {
    match (wanted, got) {
        (Value::Object(w), _) if w.contains_key("$any") => true,
        (Value::Object(w), Value::Object(g)) => {
            w.iter().all(|(k, v)| match g.get(k) {
                Some(x) => fits(v, x),
                None => v.get("$any").is_some(),
            }) && g.keys().all(|k| w.contains_key(k))
        }
        (Value::Array(w), Value::Array(g)) => {
            w.len() == g.len() && w.iter().zip(g).all(|(a, b)| fits(a, b))
        }
        _ => wanted == got,
    }
}
