# ruff: noqa: E501  (replies are kept on one line each, as a model sends them)
"""Judge replies written the way current models write, each with a careful person's reading.

Our own examples, written for halugen before the reader's rules were changed for them (the
older ``verdict_table`` is read perfectly, so it no longer predicts what happens on replies
nobody tuned for). The question behind every reply is "does the shown text contain
hallucination?": "yes" = hallucinated, "no" = not hallucinated, "invalid" = a careful reader
could not say which (it declines, hedges both ways, commits to both sides or says neither).

Styles: reasoning models (think blocks, ``\\boxed{}``), JSON under other key names, markdown
tables, CJK and other languages, emoji marks, refusals, negations and hedges, echoed
questions, emphatic statements, long explanations.

``DEVELOPMENT`` (the first two thirds) is what the reader's rules were written against;
``HOLDOUT`` (the last third) was written at the same time and kept unseen while the rules
were written; its figures before any tuning on it are recorded in ``HOLDOUT_FIRST_MEASURE``.
"""

from __future__ import annotations

# (reply, careful reading)
DEVELOPMENT: list[tuple[str, str]] = [
    # -- reasoning models: think blocks --------------------------------------------------
    (
        "<think>\nThe question asks where Mozart was born. The answer says Vienna. Mozart was born in Salzburg, so the answer is wrong.\n</think>\n\nYes",
        "yes",
    ),
    (
        "<think>\nOkay, let me check. The knowledge says the Eiffel Tower opened in 1889, and the answer says 1889. That matches, so no hallucination.\n</think>\n\nVerdict: No",
        "no",
    ),
    (
        "<think>\nHmm. Is there hallucination? The answer claims the river flows into the Baltic Sea, but the knowledge says the North Sea. So yes.\n</think>\n\nThe answer contains a hallucination: the Rhine flows into the North Sea, not the Baltic.\n\n**Verdict: Yes**",
        "yes",
    ),
    ("<think>The answer matches every fact in the document. I'll answer no.</think>\n**No**", "no"),
    (
        "<think>\nLet me think about whether yes or no... the answer says six players, that is right.\n</think>\nNo.",
        "no",
    ),
    (
        "<think>\nThe summary says the company lost money but the document says it made a profit.\n\nWait, let me re-read. Yes, the document says a profit of $3m. So the summary is unfaithful.\n</think>\n\nThe summary is unfaithful to the document.\n\nVerdict: Yes",
        "yes",
    ),
    ("<think>\nThe answer says 1818, the knowledge says 1818. Correct.\n", "invalid"),
    ("<think>\n\n</think>\n\nNo, the answer is consistent with the knowledge.", "no"),
    (
        "<think>\nThe answer gives the right capital.\n</think>\nThe answer is correct and contains no hallucination.",
        "no",
    ),
    (
        "<think>\nCheck: the answer names Raphael but Michelangelo painted the ceiling.\n</think>\n\nThe answer is incorrect.\n\n\\boxed{Yes}",
        "yes",
    ),
    # -- \boxed{} -------------------------------------------------------------------------
    ("\\boxed{Yes}", "yes"),
    ("\\boxed{No}", "no"),
    ("$\\boxed{\\text{No}}$", "no"),
    ("**Final Answer**\n\\[\n\\boxed{\\text{Yes}}\n\\]", "yes"),
    ("The knowledge supports the answer in every detail.\n\nFinal answer: $\\boxed{No}$", "no"),
    ("\\boxed{\\text{Hallucinated}}", "yes"),
    ("\\boxed{\\text{Not hallucinated}}", "no"),
    ("\\boxed{}", "invalid"),
    (
        "Step 1: The question asks for the year the novel was first published.\nStep 2: The knowledge says 1818.\nStep 3: The answer says 1831, which is the year of the revised edition.\n\nTherefore the answer contains hallucination.\n\n$$\\boxed{\\text{Yes}}$$",
        "yes",
    ),
    ("\\boxed{Yes/No}", "invalid"),
    # -- JSON under other key names -----------------------------------------------------
    ('{"is_hallucinated": true}', "yes"),
    ('{"contains_hallucination": "no"}', "no"),
    (
        '{"hallucination_detected": false, "explanation": "The answer matches the knowledge."}',
        "no",
    ),
    ('{"judgment": "Yes"}', "yes"),
    ('{"result": "hallucinated"}', "yes"),
    ('{"label": "not_hallucinated"}', "no"),
    ('{"answer_is_correct": true}', "no"),
    ('{"has_hallucination": "Yes", "reason": "The date is wrong."}', "yes"),
    (
        '```json\n{\n  "reasoning": "The answer names the wrong city.",\n  "final_answer": "Yes"\n}\n```',
        "yes",
    ),
    ('{"decision": "NO", "confidence": 0.93}', "no"),
    ('{"score": 1}', "invalid"),
    ('{"classification": "faithful"}', "no"),
    ('{"hallucination": "none"}', "no"),
    ('{"correct": false}', "yes"),
    ('{"verdict": {"value": "No", "confidence": "high"}}', "no"),
    ('{"analysis": "The answer is right.", "hallucination": "no"}', "no"),
    ('{"explanation": "Mozart was born in Salzburg."}', "invalid"),
    ('{"is_factual": "yes"}', "no"),
    # -- markdown tables ----------------------------------------------------------------
    ("| Check | Result |\n|---|---|\n| Hallucination | Yes |", "yes"),
    (
        "| Field | Value |\n|-------|-------|\n| Verdict | **No** |\n| Reason | Matches the knowledge |",
        "no",
    ),
    (
        "| Claim | Supported by knowledge |\n|---|---|\n| Born in 1756 | ✅ |\n| Born in Vienna | ❌ |\n\n**Verdict:** Yes — one claim is not supported.",
        "yes",
    ),
    (
        "| Question | Answer | Hallucinated? |\n|---|---|---|\n| Where was Mozart born? | Vienna | Yes |",
        "yes",
    ),
    (
        "| Hallucinated | Explanation |\n|:---:|---|\n| No | The answer agrees with the document. |",
        "no",
    ),
    (
        "| Aspect | Assessment |\n|---|---|\n| Accuracy | Correct |\n| Completeness | Complete |",
        "no",
    ),
    # -- CJK and other languages --------------------------------------------------------
    ("是", "yes"),
    ("否", "no"),
    ("答案：是", "yes"),
    ("结论：否。答案与知识一致。", "no"),
    ("是的，这个回答包含幻觉。", "yes"),
    ("不，这个回答没有幻觉。", "no"),
    ("该回答不包含幻觉。", "no"),
    ("该回答存在幻觉：莫扎特出生于萨尔茨堡，而不是维也纳。", "yes"),
    ("判断：否", "no"),
    ("**是**", "yes"),
    ("はい", "yes"),
    ("いいえ、回答は正しいです。", "no"),
    ("아니요", "no"),
    ("예, 환각이 포함되어 있습니다.", "yes"),
    ("Ja", "yes"),
    ("Nein, die Antwort ist korrekt.", "no"),
    ("Oui, la réponse contient une hallucination.", "yes"),
    ("Non.", "no"),
    ("Sí", "yes"),
    ("Нет", "no"),
    ("Não, a resposta está correta.", "no"),
    ("答案是否包含幻觉？否。", "no"),
    ("<think>答案说维也纳，但莫扎特出生在萨尔茨堡。</think>\n\n是", "yes"),
    ("最终答案：\\boxed{否}", "no"),
    # -- emoji marks --------------------------------------------------------------------
    ("✅ No hallucination", "no"),
    ("❌ Hallucinated", "yes"),
    ("✅", "invalid"),
    ("Verdict: ❌ No", "no"),
    ("✅ Correct — the answer matches the knowledge.", "no"),
    ("❌ Incorrect: the year should be 1889.", "yes"),
    ("⚠️ Hallucination detected: the answer invents a second author.", "yes"),
    ("🟢 Not hallucinated", "no"),
    ("**Verdict:** 🚫 Hallucinated", "yes"),
    # -- refusals -----------------------------------------------------------------------
    ("I'm sorry, but I can't assist with that request.", "invalid"),
    (
        "As an AI language model, I don't have access to real-time information, so I cannot verify this answer.",
        "invalid",
    ),
    ("I can't verify this without browsing the web.", "invalid"),
    (
        "I'm unable to determine whether the answer contains hallucination without more context.",
        "invalid",
    ),
    ("I can't browse the internet, but based on what I know the answer is correct.", "no"),
    ("Sorry, I cannot help with evaluating this content.", "invalid"),
    # -- negations and hedges that govern the verdict ------------------------------------
    ("I don't think the answer contains any hallucination.", "no"),
    ("I do not believe the answer is hallucinated.", "no"),
    ("It is unlikely that the answer is hallucinated.", "no"),
    ("There's no evidence the answer is hallucinated.", "no"),
    ("Nothing in the answer is hallucinated.", "no"),
    ("I don't think so.", "no"),
    ("I think so; the date is wrong.", "yes"),
    ("Probably not.", "no"),
    ("Probably yes.", "yes"),
    ("It might be hallucinated, but I'm not certain.", "invalid"),
    ("The answer may contain a hallucination.", "invalid"),
    ("I doubt the answer is hallucinated.", "no"),
    ("I wouldn't say the answer is hallucinated.", "no"),
    ("The answer is not incorrect.", "no"),
    ("No part of the answer is fabricated.", "no"),
    ("None of the claims in the answer are unsupported.", "no"),
    ("There is no reason to believe the answer is wrong.", "no"),
    ("I can't find anything wrong with the answer.", "no"),
    ("Not that I can see.", "no"),
    ("The answer isn't hallucinated.", "no"),
    ("It is likely that the answer is hallucinated.", "yes"),
    ("The answer seems plausible.", "invalid"),
    # -- questions echoed before their answer ---------------------------------------------
    ("Hallucinated? No.", "no"),
    ("Does the answer contain hallucination? No, it matches.", "no"),
    ("Is the answer hallucinated? Yes — Mozart was born in Salzburg.", "yes"),
    ("**Does the response contain hallucination?**\nNo.", "no"),
    ("Q: Does the answer contain hallucination?\nA: Yes", "yes"),
    ("Is the answer correct? No.", "yes"),
    ("Is the answer correct? Yes, it matches the knowledge.", "no"),
    ("Any hallucination? None.", "no"),
    # -- emphatic statements --------------------------------------------------------------
    ("The answer does contain a hallucination.", "yes"),
    ("It DOES contain hallucination: the year is wrong.", "yes"),
    ("Yes, it does contain hallucinated content.", "yes"),
    ("The response does indeed contain a hallucination about the author.", "yes"),
    ("This answer is clearly fabricated.", "yes"),
    # -- long explanations --------------------------------------------------------------
    (
        "Let's analyze the answer step by step.\n\n1. The question asks which sea the Rhine flows into.\n2. According to the knowledge, the Rhine reaches the North Sea in the Netherlands.\n3. The answer states the Baltic Sea.\n\nThere is no mention of the Baltic Sea in the knowledge, and it contradicts the stated fact.\n\nTherefore, the answer contains hallucination.",
        "yes",
    ),
    (
        "The question asks for the year Frankenstein was first published. The knowledge states that it was first published in London in 1818. The answer gives 1818, which agrees with the knowledge. There is nothing in the answer that is not supported.\n\nIn conclusion, the answer is accurate and does not contain any hallucination.",
        "no",
    ),
    (
        "### Analysis\nThe summary says the merger closed in March; the document says March too. The figures also match.\n\n### Conclusion\nThe summary is **not hallucinated**.",
        "no",
    ),
    (
        "## Evaluation\n\n**Question:** Who painted the ceiling of the Sistine Chapel?\n**Answer given:** Raphael\n\nThe ceiling was painted by Michelangelo between 1508 and 1512. Raphael painted rooms in the Vatican, but not this ceiling.\n\n## Verdict\n\n**Yes**, the answer contains hallucination.",
        "yes",
    ),
    (
        "The response addresses the user's query and every claim in it is accurate: water boils at 100 °C at sea level and at lower temperatures at altitude. No invented facts, no irrelevant content.\n\nVerdict: No",
        "no",
    ),
    (
        "The knowledge says nothing about a second album, and there is no record of the band releasing one in 1999. The answer invents it.\n\nSo the answer is hallucinated.",
        "yes",
    ),
    # -- verdict labels with words other than Yes/No --------------------------------------
    ("Verdict: Not hallucinated", "no"),
    ("Final verdict: **Hallucinated**", "yes"),
    ("Verdict: Correct", "no"),
    ("Verdict: Partially hallucinated — the date is wrong.", "yes"),
    ("Label: HALLUCINATED", "yes"),
    ("Classification: Faithful", "no"),
    ("[[Yes]]", "yes"),
    ("<verdict>No</verdict>", "no"),
    ("Verdict: No (confidence: 85%)", "no"),
    ("Yes (confidence: high)", "yes"),
    ("Hallucination status: not present", "no"),
    ("Is hallucinated: **NO**", "no"),
    # -- second thoughts ------------------------------------------------------------------
    (
        "No. Wait, let me check the date again: the knowledge says 1889, the answer says 1890. So yes, there is a hallucination.\n\nFinal answer: Yes",
        "yes",
    ),
    ("Initially it looked wrong, but the knowledge confirms it.\n\nVerdict: No", "no"),
    # -- no verdict at all ----------------------------------------------------------------
    ("True", "invalid"),
    ("0", "invalid"),
    ("The answer is plausible, but I cannot verify it.", "invalid"),
    ("It's hard to say; it could go either way.", "invalid"),
    ("Verdict: Partially", "invalid"),
    ("Answer 2", "invalid"),
    # -- more of the same styles ---------------------------------------------------------
    (
        "<think>\nThe response says the treaty was signed in 1919. Correct. The location, Versailles, also correct.\n</think>\n\n**Answer: No**",
        "no",
    ),
    (
        "<thinking>\nThe answer attributes the quote to Lincoln; the knowledge attributes it to Jefferson.\n</thinking>\n\nHallucinated: Yes",
        "yes",
    ),
    ('{"hallucination_present": "yes"}', "yes"),
    ('{"verdict": "Not hallucinated"}', "no"),
    ('{"is_correct": "no"}', "yes"),
    ('[{"verdict": "No"}]', "no"),
    (
        "| # | Claim | Verdict |\n|---|---|---|\n| 1 | Founded in 1998 | ❌ Not supported |\n\n**Overall: Yes, the answer contains hallucination.**",
        "yes",
    ),
    ("不是。", "no"),
    ("回答正确，没有幻觉。", "no"),
    ("아니요, 답변은 정확합니다.", "no"),
    ("Nein, keine Halluzination.", "no"),
    ("Oui.", "yes"),
    ("Sì, contiene un'allucinazione.", "yes"),
    ("✔️ No hallucination found.", "no"),
    ("❗ The answer is hallucinated: the wrong year.", "yes"),
    ("I'm afraid I cannot make that judgment.", "invalid"),
    ("I don't think the summary is faithful to the document.", "yes"),
    ("I don't believe the answer is correct.", "yes"),
    ("No evidence of hallucination.", "no"),
    ("Is there any hallucination in the answer? No, there isn't.", "no"),
    ("The answer does not seem to be hallucinated.", "no"),
    ("So the final answer is: the response is hallucinated.", "yes"),
]

# Written with DEVELOPMENT, kept unseen while the rules were written.
HOLDOUT: list[tuple[str, str]] = [
    (
        "<think>\nThe user asks if the answer has hallucination. The answer says Canberra's currency is the New Zealand dollar. Australia uses the Australian dollar. So it is wrong.\n</think>\n\n**Yes** — Australia's currency is the Australian dollar.",
        "yes",
    ),
    (
        "<think>\nOkay. Knowledge: Atacama in northern Chile. Answer: Chile. Fine.\n</think>\n\nThe answer is supported by the knowledge, so it does not contain hallucination.",
        "no",
    ),
    (
        "<think>\nFirst I thought the answer was wrong, yes, but actually the second film did come out in 2004.\n</think>\n\nNo",
        "no",
    ),
    (
        "<think>\nThe summary adds a quote from the CEO that is not in the document.\n</think>\n\n\\boxed{\\text{Yes}}",
        "yes",
    ),
    (
        "<think>\nLet me verify each claim in the response. Claim one: correct. Claim two: correct. Claim three",
        "invalid",
    ),
    (
        "<think>The dialogue response recommends a film by the right director.</think>\nVerdict: **No**",
        "no",
    ),
    ("\\boxed{\\text{NO}}", "no"),
    (
        "The answer misattributes the novel to Charlotte Brontë.\n\n**Final Answer:** \\boxed{Yes}",
        "yes",
    ),
    ("$$\n\\boxed{\\textbf{No}}\n$$", "no"),
    ("\\boxed{\\text{The answer is hallucinated}}", "yes"),
    ("\\boxed{?}", "invalid"),
    ('{"is_hallucination": false}', "no"),
    ('{"contains_hallucinations": true, "details": "The year is wrong."}', "yes"),
    ('{"Hallucination Detected": "Yes"}', "yes"),
    ('{"prediction": "no"}', "no"),
    ('```json\n{"thought": "Matches the document.", "answer": "No"}\n```', "no"),
    ('{"faithful": false}', "yes"),
    ('{"hallucinated": "maybe"}', "invalid"),
    ('{"output": "Hallucinated"}', "yes"),
    ('{"rating": 4}', "invalid"),
    ("{'is_hallucinated': 'no'}", "no"),
    ("| Criterion | Verdict |\n|---|---|\n| Contains hallucination | No |", "no"),
    ("| Item | Finding |\n| --- | --- |\n| Hallucination | **Yes** (wrong birthplace) |", "yes"),
    (
        "| Claim | Status |\n|---|---|\n| Opened in 1889 | ✅ Supported |\n| Designed by Eiffel's company | ✅ Supported |\n\n**Verdict: No**",
        "no",
    ),
    ("| Hallucinated? |\n|---|\n| Yes |", "yes"),
    ("否。", "no"),
    ("是的", "yes"),
    ("答案：否，回答与文档一致。", "no"),
    ("这个回答没有包含任何幻觉。", "no"),
    ("回答包含幻觉。", "yes"),
    ("结论：存在幻觉", "yes"),
    ("いいえ", "no"),
    ("はい、回答には幻覚が含まれています。", "yes"),
    ("네", "yes"),
    ("Nein", "no"),
    ("Ja, die Antwort enthält eine Halluzination.", "yes"),
    ("Non, la réponse est correcte.", "no"),
    ("Sí, la respuesta contiene una alucinación.", "yes"),
    ("Да", "yes"),
    ("Sim", "yes"),
    ("判断：是。", "yes"),
    ("❌", "invalid"),
    ("✅ Not hallucinated — every fact checks out.", "no"),
    ("🔴 Hallucinated", "yes"),
    ("Verdict: ✅ Yes", "yes"),
    ("❌ Wrong: the tower opened in 1889, not 1887.", "yes"),
    ("I'm sorry, I can't help with that.", "invalid"),
    ("As an AI, I cannot verify facts about real people.", "invalid"),
    ("I'm not able to check this answer against external sources.", "invalid"),
    ("I do not have enough information to judge this answer.", "invalid"),
    ("I don't believe there is any hallucination in the answer.", "no"),
    ("I do not think the response is hallucinated.", "no"),
    ("It's unlikely that the summary contains a hallucination.", "no"),
    ("There is no indication that the answer is hallucinated.", "no"),
    ("Nothing in the response is fabricated.", "no"),
    ("It is possible that the answer is hallucinated.", "invalid"),
    ("Possibly not.", "invalid"),
    ("I don't see anything hallucinated here.", "no"),
    ("There's no sign of hallucination.", "no"),
    ("I doubt it.", "no"),
    ("It is very likely hallucinated.", "yes"),
    ("Hallucination? Yes.", "yes"),
    ("Does the answer contain hallucination? Yes, it names the wrong city.", "yes"),
    ("Is the response accurate? Yes.", "no"),
    ("Is the summary faithful? No, it adds a number not in the document.", "yes"),
    ("Contains hallucination? No.", "no"),
    ("The summary does contain hallucinated details.", "yes"),
    ("It definitely contains a hallucination.", "yes"),
    ("The answer is entirely made up.", "yes"),
    (
        "To decide, I compare the answer with the knowledge.\n\n- The knowledge says the Rhine rises in the Swiss Alps.\n- It says the river reaches the North Sea.\n- The answer says the North Sea.\n\nThe answer agrees with the knowledge. There is no hallucination.",
        "no",
    ),
    (
        "The question asks about the composer's birthplace. Although the composer spent most of his career in Vienna, he was born in Salzburg. The answer confuses the two cities, which is a classic inference error.\n\nHence, the answer is hallucinated.",
        "yes",
    ),
    (
        "**Analysis:** The response lists three causes of the war; the third one is not mentioned by any historian I know of and seems invented.\n\n**Verdict:** Yes",
        "yes",
    ),
    ("Verdict: Accurate", "no"),
    ("Verdict: Incorrect", "yes"),
    ("Final label: NOT HALLUCINATED", "no"),
    ("Result: Hallucination", "yes"),
    ("[[No]]", "no"),
    ("<answer>Yes</answer>", "yes"),
    ("Contains hallucination: **NO**", "no"),
    (
        "Yes. Actually no — on a second look, the knowledge does list that album.\n\nVerdict: No",
        "no",
    ),
    ("False", "invalid"),
    ("Verdict: Uncertain", "invalid"),
    ("Answer 1", "invalid"),
]

REPLY_STYLES: list[tuple[str, str]] = DEVELOPMENT + HOLDOUT

# Measured once on HOLDOUT with the rules written on DEVELOPMENT, before any change made for
# it (read wrongly: of all replies; left invalid: of the replies that have a verdict):
#   reader before this table (main):   DEVELOPMENT 8.4% wrong, 51.7% invalid;
#                                      HOLDOUT     8.4% wrong (7/83), 53.6% invalid (37/69)
#   rules written on DEVELOPMENT:      DEVELOPMENT 0.0% wrong, 0.0% invalid;
#                                      HOLDOUT     0.0% wrong (0/83), 2.9% invalid (2/69)
# The two left invalid ("There's no sign of hallucination.", "It is very likely
# hallucinated.") were one bug (a governed clause read with its leading space); after it
# was fixed, HOLDOUT reads 0.0% wrong, 0.0% invalid.
HOLDOUT_FIRST_MEASURE = {"wrong": 0 / 83, "invalid": 2 / 69}
