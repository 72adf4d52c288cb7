-- Prediction ids that name no row of this store.
SELECT s.id FROM predictions s ANTI JOIN programs p ON p.id = s.id ORDER BY s.id;
