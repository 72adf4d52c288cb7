-- Search hits (the registered table `hits`: id, line, snippet, snippet_html) with each row's problem title, label
-- and latest re-run verdict, in the hits' order.
SELECT h.id, p.title, p.y, p.ok, p.measured_status, p.measured_error, h.line, h.snippet, h.snippet_html
FROM hits h
LEFT JOIN programs p ON p.id = h.id
ORDER BY h.id, h.line;
