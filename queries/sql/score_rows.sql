-- Predictions (the registered table `predictions`: id, score, p_correct) next to each row's label and the fields
-- the baselines use; rows the store does not hold are left out (score_unknown_ids lists them).
SELECT p.id, p.split, p.holdout_group, p.problem_key, p.y, p.ok, p.n_chars, p.n_kernels, s.score, s.p_correct
FROM predictions s
JOIN programs p ON p.id = s.id
ORDER BY p.id;
