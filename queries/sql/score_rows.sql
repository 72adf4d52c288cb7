-- Predictions (the registered table `predictions`: id, score, p_correct) next to each row's label and the fields
-- the baselines use; rows the store does not hold are left out (score_unknown_ids lists them).
-- near_copy_in_train: for a test row, whether its near-duplicate component (near-copy links, chained) holds a
-- train row (null for train rows, and for every row while $clustered is false: the store's clusters were never
-- computed).
SELECT p.id, p.split, p.holdout_group, p.problem_key, p.y, p.ok, p.n_chars, p.n_kernels, s.score, s.p_correct,
       CASE WHEN $clustered::BOOLEAN AND p.split = 'test'
            THEN coalesce(p.near_dup_component IN (SELECT near_dup_component FROM programs
                                                   WHERE split = 'train' AND near_dup_component IS NOT NULL), false)
       END AS near_copy_in_train
FROM predictions s
JOIN programs p ON p.id = s.id
ORDER BY p.id;
