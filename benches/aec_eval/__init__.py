"""An echo-cancellation evaluation that cannot be tuned to: seeded rooms, devices and talkers
(:mod:`.generator`), the figures (:mod:`.metrics`), and the run over tune or held-out seeds
(``python -m benches.aec_eval``; benches/RESULTS.md, "Echo cancellation over unseen rooms")."""
