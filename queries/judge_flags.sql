-- Judge checks: verdicts of a judge that a reader should not take on trust. Per judge:
-- how many verdicts gave credit (score 1.0 or 0.6) while their own rationale says the item is
-- absent from the conclusions ("not stated", "does not mention", "no evidence", ...); how many
-- episodes with 3 or more items got the same score for every item (a judge that never varies);
-- and flag, in words, when either reaches a fifth. The same model as agent and judge gave 0.6 to
-- all 9 items of an episode and said in 6 rationales that the item was not stated: both checks
-- catch it. The embedding judge writes no rationale of its own, so only its constancy is checked.
-- failed_verdicts: verdicts whose judge gave no usable answer (a judge error: no score); the
-- warning names their causes, most frequent first, each with its count.
WITH v AS (
    SELECT l.episode_id, l.judge_id, l.item_id, l.score, l.rationale,
           regexp_matches(lower(coalesce(l.rationale, '')),
               '(not (explicitly |directly |clearly )?(stated|mentioned|addressed|supported|present|discussed|included|covered)'
               || '|(does|do|did) ?n[o'']t (mention|state|address|support|include|discuss|cover)'
               || '|no (evidence|mention|reference)|is absent|are absent|is missing|fails? to (mention|state|address))')
               AS says_absent
    FROM latest_verdicts l
    WHERE l.score IS NOT NULL
), per_episode AS (
    SELECT judge_id, episode_id, count(*) AS items, count(DISTINCT score) AS distinct_scores,
           count(*) FILTER (WHERE says_absent AND score > 0) AS contradicted
    FROM v GROUP BY ALL
), scored AS (
    SELECT judge_id,
           count(*) FILTER (WHERE items >= 3) AS episodes_3_items,
           count(*) FILTER (WHERE items >= 3 AND distinct_scores = 1) AS episodes_never_varying,
           sum(contradicted) AS verdicts_contradicting_rationale
    FROM per_episode GROUP BY ALL
), per_judge AS (
    SELECT judge_id, count(DISTINCT episode_id) AS episodes, count(*) AS verdicts,
           count(*) FILTER (WHERE error) AS failed_verdicts,
           coalesce(any_value(s.episodes_3_items), 0) AS episodes_3_items,
           coalesce(any_value(s.episodes_never_varying), 0) AS episodes_never_varying,
           coalesce(any_value(s.verdicts_contradicting_rationale), 0) AS verdicts_contradicting_rationale
    FROM latest_verdicts LEFT JOIN scored s USING (judge_id) GROUP BY ALL
), causes AS (
    SELECT judge_id, string_agg(format('{} x "{}"', n, rationale), ', ' ORDER BY n DESC, rationale) AS causes
    FROM (SELECT judge_id, coalesce(rationale, '(none recorded)') AS rationale, count(*) AS n
          FROM latest_verdicts WHERE error GROUP BY ALL)
    GROUP BY ALL
), examples AS (
    SELECT judge_id, list(episode_id || ' ' || item_id ORDER BY episode_id, item_id)[1:3] AS contradicting_examples
    FROM v WHERE says_absent AND score > 0 GROUP BY ALL
)
SELECT p.judge_id, p.episodes, p.verdicts, p.failed_verdicts, p.verdicts_contradicting_rationale,
       round(p.verdicts_contradicting_rationale / nullif(p.verdicts - p.failed_verdicts, 0), 3) AS contradicting_share,
       p.episodes_never_varying, p.episodes_3_items,
       round(p.episodes_never_varying / nullif(p.episodes_3_items, 0), 3) AS never_varying_share,
       nullif(concat_ws('; ',
           CASE WHEN p.failed_verdicts > 0
                THEN format('{} of {} verdicts failed and give no score: {}', p.failed_verdicts, p.verdicts,
                            c.causes) END,
           CASE WHEN p.verdicts_contradicting_rationale >= 0.2 * p.verdicts AND p.verdicts_contradicting_rationale > 0
                THEN format('{} of {} verdicts give credit while their rationale says the item is absent',
                            p.verdicts_contradicting_rationale, p.verdicts) END,
           CASE WHEN p.episodes_never_varying >= 0.2 * p.episodes_3_items AND p.episodes_never_varying > 0
                THEN format('{} of {} episodes got one score for every item', p.episodes_never_varying,
                            p.episodes_3_items) END), '') AS flag_warning,
       e.contradicting_examples
FROM per_judge p LEFT JOIN examples e USING (judge_id) LEFT JOIN causes c USING (judge_id)
ORDER BY p.judge_id;
