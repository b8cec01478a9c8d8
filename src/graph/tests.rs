//! ToolNet's equations on small graphs, computed by hand.

use super::*;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

fn config(alpha: f64, beta: f64) -> ToolnetConfig {
    ToolnetConfig { alpha, beta, ..Default::default() }
}

/// Trajectories: [a, b], [a, b], [a, c], [b].
fn small() -> ToolGraph {
    let mut g = ToolGraph::new(&config(0.5, 0.5));
    g.add_trajectory(&["a", "b"]);
    g.add_trajectory(&["a", "b"]);
    g.add_trajectory(&["a", "c"]);
    g.add_trajectory(&["b"]);
    g
}

#[test]
fn eq5_static_weights_are_bigram_frequencies() {
    let g = small();
    // start → a ×3, start → b ×1.
    assert_eq!(g.count(START, "a"), 3);
    assert!(close(g.static_weight(START, "a"), 0.75));
    assert!(close(g.static_weight(START, "b"), 0.25));
    // a → b ×2, a → c ×1.
    assert!(close(g.static_weight("a", "b"), 2.0 / 3.0));
    assert!(close(g.static_weight("a", "c"), 1.0 / 3.0));
    // b is last in three trajectories: b → end ×3.
    assert!(close(g.static_weight("b", END), 1.0));
    assert!(close(g.static_weight("c", END), 1.0));
    assert_eq!(g.static_weight("a", "a"), 0.0);
    assert_eq!(g.static_weight("zzz", "a"), 0.0);
    assert_eq!(g.trajectory_count(), 4);
    assert_eq!(g.edge_count(), 6);
    // An empty trajectory adds nothing; a repeated call is a self-loop.
    let mut h = ToolGraph::default();
    h.add_trajectory::<&str>(&[]);
    assert_eq!(h.edge_count(), 0);
    h.add_trajectory(&["x", "x"]);
    assert!(close(h.static_weight("x", "x"), 0.5));
    assert!(close(h.static_weight("x", END), 0.5));
}

#[test]
fn without_scores_eq8_keeps_the_static_order() {
    // All s = 0 → f = 1 → Δw uniform over the successors: w = β·w⁽⁰⁾ + (1−β)/n.
    let g = small();
    assert!(close(g.delta_weight("a", "b"), 0.5));
    assert!(close(g.weight("a", "b"), 0.5 * 2.0 / 3.0 + 0.5 * 0.5));
    assert!(close(g.weight("a", "c"), 0.5 * 1.0 / 3.0 + 0.5 * 0.5));
    let order: Vec<&str> = g.successors("a").into_iter().map(|(t, _)| t).collect();
    assert_eq!(order, ["b", "c"]);
    // Weights out of a node sum to 1.
    let sum: f64 = g.successors("a").iter().map(|(_, w)| w).sum();
    assert!(close(sum, 1.0));
}

#[test]
fn eq7_maps_scores_to_positive_numbers() {
    let g = ToolGraph::new(&config(0.5, 0.5));
    assert!(close(g.f(0.0), 1.0));
    assert!(close(g.f(2.0), 2.0)); // 0.5·2 + 1
    assert!(close(g.f(4.0), 3.0));
    assert!(close(g.f(-2.0), (-1.0f64).exp())); // e^{0.5·(−2)}
    assert!(g.f(-100.0) > 0.0);
}

#[test]
fn eq6_and_eq8_learn_from_scores() {
    let mut g = small();
    // Run 1: b scored +2, c scored −2. Run 2: b +1.
    let (b, c) = ("b".to_string(), "c".to_string());
    g.record_scores([(&b, &2.0), (&c, &-2.0)]);
    g.record_scores([(&b, &1.0)]);
    assert!(close(g.accumulated("b"), 3.0)); // Eq. 6: s = Σ scores
    assert!(close(g.accumulated("c"), -2.0));
    assert_eq!(g.score("b").unwrap().runs, 2);
    assert_eq!(g.score("b").unwrap().recent, [2.0, 1.0]);
    // Eq. 7: f(3) = 2.5, f(−2) = e^{−1}. Eq. 8 over a's successors {b, c}:
    let fb = 2.5;
    let fc = (-1.0f64).exp();
    let dwb = fb / (fb + fc);
    let dwc = fc / (fb + fc);
    assert!(close(g.delta_weight("a", "b"), dwb));
    assert!(close(g.delta_weight("a", "c"), dwc));
    assert!(close(g.weight("a", "b"), 0.5 * (2.0 / 3.0) + 0.5 * dwb));
    assert!(close(g.weight("a", "c"), 0.5 * (1.0 / 3.0) + 0.5 * dwc));
    // Successors of start: a (unscored, f = 1) and b (f = 2.5).
    assert!(close(g.weight(START, "b"), 0.5 * 0.25 + 0.5 * 2.5 / 3.5));
    // β = 1 is the static graph; β = 0 the learnt part alone.
    let mut only_static = g.clone();
    only_static.beta = 1.0;
    assert!(close(only_static.weight("a", "c"), 1.0 / 3.0));
    let mut only_learnt = g.clone();
    only_learnt.beta = 0.0;
    assert!(close(only_learnt.weight("a", "c"), dwc));
}

#[test]
fn scores_are_clamped_per_run_and_in_total() {
    let mut g = ToolGraph::default();
    let t = "t".to_string();
    g.record_scores([(&t, &7.0)]);
    assert!(close(g.accumulated("t"), 3.0), "one run scores at most 3");
    for _ in 0..10 {
        g.record_scores([(&t, &3.0)]);
    }
    assert!(close(g.accumulated("t"), SCORE_BOUND));
    assert_eq!(g.score("t").unwrap().recent.len(), RECENT_RUNS);
    g.record_scores([(&t, &f64::NAN)]);
    assert_eq!(g.score("t").unwrap().runs, 11, "a NaN score is ignored");
}

#[test]
fn predecessors_and_integer_weights() {
    let g = small();
    let before: Vec<&str> = g.predecessors("b").into_iter().map(|(f, _)| f).collect();
    // weight(start → b) = 0.5·0.25 + 0.5·0.5 = 0.375; weight(a → b) = 0.5·2/3 + 0.25 ≈ 0.583.
    assert_eq!(before, ["a", START]);
    assert_eq!(integer_weight(0.5834), 58);
    assert_eq!(integer_weight(0.001), 1, "an edge never shows as 0");
    assert_eq!(integer_weight(1.0), 100);
}
