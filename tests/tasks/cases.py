"""Per-task cases for the shared task tests (test_tasks.py): replies, choices and forms.

Each task has: ``CANDIDATES`` (sampling reply, text, pattern, problem), ``CHOICES`` (judge
reply, pick) over ``SHOWN`` candidates, and ``FORMS`` (right text, candidate, problem) for
the task's guards, equality with the right text included.
"""

from __future__ import annotations

from halugen.tasks.checks import LengthRatio
from tests.task_specs import task_spec

# the dialogue task's length bounds, as its task.toml declares them
_RATIO = next(c for c in task_spec("dialogue").checks if isinstance(c, LengthRatio))
MAX_LENGTH_RATIO, MIN_LENGTH_RATIO, LENGTH_SLACK = _RATIO.max_ratio, _RATIO.min_ratio, _RATIO.slack

# -- qa ----------------------------------------------------------------------------------

# (reply, answer, pattern, problem)
QA_CANDIDATES = [
    ("Pattern: factualness\nAnswer: Mumbai", "Mumbai", "factualness", ""),
    ("Answer: Mumbai\nPattern: inference", "Mumbai", "inference", ""),
    ("**Pattern:** Specificity\n**Answer:** the 1890s", "the 1890s", "specificity", ""),
    ("Pattern: Factualness pattern\nAnswer: 1902", "1902", "factualness", ""),
    ("Pattern: 2. factual\nAnswer: 1902", "1902", "factualness", ""),
    ("Pattern: INFERENCE (wrong bridge)\nAnswer: Egypt", "Egypt", "inference", ""),
    ("Pattern: comprehension / inference\nAnswer: Egypt", "Egypt", "comprehension", ""),
    ("Pattern: misattribution\nAnswer: Egypt", "Egypt", "unstated", ""),
    ("Answer: Egypt", "Egypt", "unstated", ""),
    ("Answer: Egypt (pattern: inference)", "Egypt", "inference", ""),
    ("Answer: Egypt [Pattern - factualness]", "Egypt", "factualness", ""),
    ("Answer: Egypt (factualness)", "Egypt", "factualness", ""),
    ("Pattern: inference\nAnswer: Egypt (pattern: factualness)", "Egypt", "inference", ""),
    ('Pattern: factualness\nAnswer: "Lake Geneva"', "Lake Geneva", "factualness", ""),
    ("Answer: “Lake Geneva”", "Lake Geneva", "unstated", ""),
    ("Answer: '90s", "'90s", "unstated", ""),
    ('Answer: "Yes" and "No"', '"Yes" and "No"', "unstated", ""),
    ("Answer: the   Czech\nkoruna", "the Czech koruna", "unstated", ""),
    ("Answer:\nthe euro", "the euro", "unstated", ""),
    (
        "Sure! Here it is.\n\nPattern: inference\nAnswer: the euro\n\nThis is wrong because "
        "the Czech Republic does not use the euro.",
        "the euro",
        "inference",
        "",
    ),
    (
        "Pattern: inference\nAnswer: the euro\nExplanation: a wrong step",
        "the euro",
        "inference",
        "",
    ),
    ("```\nPattern: inference\nAnswer: the euro\n```", "the euro", "inference", ""),
    ("- Pattern: factualness\n- Answer: 1,920 metres", "1,920 metres", "factualness", ""),
    ("## Answer: Khabarovsk", "Khabarovsk", "unstated", ""),
    (
        "Hallucinated answer: Joseph Lister\nPattern: factualness",
        "Joseph Lister",
        "factualness",
        "",
    ),
    (
        "Knowledge: K\nQuestion: Q?\nRight answer: Alexander Fleming\nPattern: factualness\n"
        "Answer: Joseph Lister",
        "Joseph Lister",
        "factualness",
        "",
    ),
    ("Answer: Paris\nAnswer: Lyon", "Paris", "unstated", ""),
    # titles that open like a refusal are still answers
    ("Pattern: factualness\nAnswer: I Won't Back Down", "I Won't Back Down", "factualness", ""),
    ("Answer: Sorry", "Sorry", "unstated", ""),
    ("Answer: (I Can't Get No) Satisfaction", "(I Can't Get No) Satisfaction", "unstated", ""),
    # unusable replies
    ("", "", "unstated", "empty_reply"),
    ("   \n ", "", "unstated", "empty_reply"),
    ("Joseph Lister", "", "unstated", "no_answer_label"),
    ("Pattern: factualness\nJoseph Lister", "", "factualness", "no_answer_label"),
    ("Right answer: Alexander Fleming", "", "unstated", "no_answer_label"),
    ("Pattern: factualness\nAnswer:", "", "factualness", "empty_answer"),
    ('Answer: ""', "", "unstated", "empty_answer"),
    ("Answer: ...", "", "unstated", "empty_answer"),
    ("Answer: <your hallucinated answer>", "", "unstated", "placeholder_answer"),
    ("I'm sorry, but I can't help create false information.", "", "unstated", "refusal"),
    ("As an AI language model, I cannot write wrong answers.", "", "unstated", "refusal"),
    ("**I cannot do that.**", "", "unstated", "refusal"),
    ("Pattern: factualness\nAnswer: I’m sorry, I can’t do this.", "", "factualness", "refusal"),
]

QA_SHOWN = ["Khabarovsk", "Vladivostok"]

# (reply, expected pick)
QA_CHOICES = [
    ("Choice: 2", 2),
    ("Choice: 1", 1),
    ("choice: 2.", 2),
    ("**Choice:** 2", 2),
    ("**Choice: Answer 1**", 1),
    ("Choice: Answer #2", 2),
    ("Choice:\n2", 2),
    ("Answer 1 misreads the knowledge.\nChoice: 2", 2),
    ("Choice: 2\nChoice: 2", 2),
    ("Choice: <the number of the answer you pick>\nChoice: 1", 1),
    ("Choice: two", 2),
    ("Choice: the first one", 1),
    ("Choice: Vladivostok", 2),
    ("2", 2),
    ("Vladivostok", 2),
    # ambiguous or out of range: no pick rather than a guess
    ("Choice: 1\nChoice: 2", None),
    ("Choice: 1 or 2", None),
    ("Choice: 3", None),
    ("Choice: 0", None),
    ("Choice: three", None),
    ("Choice: none of them", None),
    ("I would pick answer 2.", None),
    ("Both answers are wrong.", None),
    ("", None),
]

# (right answer, candidate, problem)
QA_FORMS = [
    ("Delhi", "Mumbai", ""),
    ("Delhi", "delhi!", "equals_right_answer"),
    # an answer holding the right one, or held in it, states the right answer
    ("Delhi", "New Delhi's old quarter", "contains_right_answer"),
    ("1865", "1865 and George Frederick Ernest Albert", "contains_right_answer"),
    ("President Richard Nixon", "Richard Nixon", "contains_right_answer"),
    ("yes", "Yes, but only in 1990", "contains_right_answer"),
    ("1865", "18650", ""),  # whole words only
    ("the Beatles", "the Rolling Stones", ""),
    # a length class (1, 2-3, 4-7, 8-15 words) more than one away from the right answer's
    ("Delhi", "the 7th arrondissement of Paris", "length_class"),
    ("Delhi", "the old city of Agra", "length_class"),
    ("Delhi", "Old Agra Fort", ""),
    ("It was built to carry timber and coal between the two towns.", "Wool.", "length_class"),
    ("Delhi", "Mumbai, the financial capital of India.", "sentence_for_short_answer"),
    ("Arthur's Magazine", "First for Women was started first.", "sentence_for_short_answer"),
    ("no", "yes", ""),
    ("no", "yes, they were", ""),
    ("no", "Yes, they were.", "final_punctuation"),  # a full stop where the right has none
    ("1832", "the year the canal was finished in Ontario", "answer_too_long"),
    ("Washington, D.C.", "St. Louis, Mo.", ""),
    ("Washington, D.C.", "St. Louis", "final_punctuation"),  # an abbreviation's stop counts
    (
        "It was built to carry timber and coal between the two towns.",
        "It was built to carry troops between the two towns during the war.",
        "",
    ),
    (
        "It carried timber.",
        "It carried wool, coal, grain, salt, iron ore, fish, passengers, mail and "
        "soldiers between the two river towns.",
        "answer_too_long",
    ),
]

# -- dialogue ----------------------------------------------------------------------------

R = "Denis Villeneuve directed it, with Amy Adams in the lead."

# (reply, response, pattern, problem)
DIALOGUE_CANDIDATES = [
    (f"Pattern: extrinsic-hard\nResponse: {R}", R, "extrinsic-hard", ""),
    (f"Response: {R}\nPattern: extrinsic-soft", R, "extrinsic-soft", ""),
    (f"**Pattern:** Extrinsic-Grouped\n**Response:** {R}", R, "extrinsic-grouped", ""),
    (f"Pattern: extrinsic soft\nResponse: {R}", R, "extrinsic-soft", ""),
    (f"Pattern: Extrinsic (hard)\nResponse: {R}", R, "extrinsic-hard", ""),
    (f"Pattern: extrinsic_grouped pattern\nResponse: {R}", R, "extrinsic-grouped", ""),
    (f"Pattern: Grouping\nResponse: {R}", R, "extrinsic-grouped", ""),
    (f"Pattern: hard\nResponse: {R}", R, "extrinsic-hard", ""),
    (f"Pattern: extrinsic-soft / extrinsic-hard\nResponse: {R}", R, "extrinsic-soft", ""),
    (f"Pattern: extrinsic\nResponse: {R}", R, "unstated", ""),
    (f"Pattern: wrong director\nResponse: {R}", R, "unstated", ""),
    (f"Response: {R}", R, "unstated", ""),
    (f"Response: {R} (pattern: extrinsic-hard)", R, "extrinsic-hard", ""),
    (f"Response: {R} [Pattern - soft]", R, "extrinsic-soft", ""),
    (f"Response: {R} (extrinsic-grouped)", R, "extrinsic-grouped", ""),
    (f"Pattern: extrinsic-hard\nResponse: {R} (pattern: soft)", R, "extrinsic-hard", ""),
    (f'Pattern: extrinsic-hard\nResponse: "{R}"', R, "extrinsic-hard", ""),
    (f"Response: “{R}”", R, "unstated", ""),
    ('Response: She said "wow" and left.', 'She said "wow" and left.', "unstated", ""),
    # the dialogue's speaker tags belong to the layout, not to the turn
    (f"Pattern: extrinsic-hard\nResponse: [Assistant]: {R}", R, "extrinsic-hard", ""),
    (f"Response: Assistant: {R}", R, "unstated", ""),
    (f'Response: "[Assistant]: {R}"', R, "unstated", ""),
    # a model that goes on writing the dialogue: the assistant's turn ends at the next tag
    (f"Response: {R} [Human]: Oh, I didn't know that!", R, "unstated", ""),
    (f"Response: {R}\n[Human]: Oh, I didn't know that!", R, "unstated", ""),
    (f"Response: {R}\nHuman: Thanks!", R, "unstated", ""),
    ("Response: Denis   Villeneuve\ndirected it.", "Denis Villeneuve directed it.", "unstated", ""),
    (f"Response:\n{R}", R, "unstated", ""),
    (
        f"Sure! Here it is.\n\nPattern: extrinsic-hard\nResponse: {R}\n\nThis is wrong because "
        "the knowledge names another director.",
        R,
        "extrinsic-hard",
        "",
    ),
    (
        f"Pattern: extrinsic-hard\nResponse: {R}\nExplanation: wrong director",
        R,
        "extrinsic-hard",
        "",
    ),
    (f"```\nPattern: extrinsic-hard\nResponse: {R}\n```", R, "extrinsic-hard", ""),
    (f"- Pattern: extrinsic-hard\n- Response: {R}", R, "extrinsic-hard", ""),
    (f"## Response: {R}", R, "unstated", ""),
    (f"Hallucinated response: {R}\nPattern: extrinsic-hard", R, "extrinsic-hard", ""),
    (f"Hallucinated reply: {R}", R, "unstated", ""),
    (
        "Knowledge: K\nDialogue history: [Human]: Who directed it?\nRight response: Someone.\n"
        f"Pattern: extrinsic-hard\nResponse: {R}",
        R,
        "extrinsic-hard",
        "",
    ),
    (f"Response: {R}\nResponse: Another one.", R, "unstated", ""),
    # turns that open like a refusal are still turns when they refuse nothing of the task
    (
        "Response: Sorry, I haven't seen that one yet!",
        "Sorry, I haven't seen that one yet!",
        "unstated",
        "",
    ),
    ("Response: I can't wait for the sequel.", "I can't wait for the sequel.", "unstated", ""),
    # unusable replies
    ("", "", "unstated", "empty_reply"),
    ("  \n ", "", "unstated", "empty_reply"),
    (R, "", "unstated", "no_answer_label"),
    (f"Pattern: extrinsic-hard\n{R}", "", "extrinsic-hard", "no_answer_label"),
    ("Right response: Denis Villeneuve directed it.", "", "unstated", "no_answer_label"),
    ("Pattern: extrinsic-hard\nResponse:", "", "extrinsic-hard", "empty_answer"),
    ('Response: ""', "", "unstated", "empty_answer"),
    ("Response: ...", "", "unstated", "empty_answer"),
    ("Response: [Assistant]:", "", "unstated", "empty_answer"),
    ("Response: [Human]: What else?", "", "unstated", "empty_answer"),
    ("Response: <your hallucinated response>", "", "unstated", "placeholder_answer"),
    ("I'm sorry, but I can't help create misleading replies.", "", "unstated", "refusal"),
    ("As an AI language model, I cannot write false statements.", "", "unstated", "refusal"),
    (
        "Pattern: extrinsic-soft\nResponse: I’m sorry, I can’t do this.",
        "",
        "extrinsic-soft",
        "refusal",
    ),
]

DIALOGUE_SHOWN = ["Toei Animation made it.", "Studio Ghibli made it."]

# (reply, expected pick)
DIALOGUE_CHOICES = [
    ("Choice: 2", 2),
    ("Choice: 1", 1),
    ("choice: 2.", 2),
    ("**Choice:** 2", 2),
    ("Choice: Response 1", 1),
    ("Choice: response #2", 2),
    ("Choice:\n2", 2),
    ("Response 1 names the wrong studio.\nChoice: 2", 2),
    ("Choice: <the number of the response you pick>\nChoice: 1", 1),
    ("Choice: two", 2),
    ("Choice: the first one", 1),
    ("Choice: the second response", 2),
    ("Choice: Studio Ghibli made it.", 2),
    ("2", 2),
    ("Response 2", 2),
    ("Studio Ghibli made it.", 2),
    # ambiguous or out of range: no pick rather than a guess
    ("Choice: 1\nChoice: 2", None),
    ("Choice: Response 1\nChoice: the second response", None),
    ("Choice: 1 or 2", None),
    ("Choice: 3", None),
    ("Choice: 0", None),
    ("Choice: the third response", None),
    ("Choice: none of them", None),
    ("The best response is Response 1.", None),
    ("I would pick response 2.", None),
    ("", None),
]

D_RIGHT = "x" * 100  # 100 characters
D_SENTENCE = "I think Denis Villeneuve directed that one."  # a sentence, for sentences
D_HIGH = int(MAX_LENGTH_RATIO * 100 + LENGTH_SLACK)  # 240: the longest accepted
D_LOW = int(MIN_LENGTH_RATIO * 100 - LENGTH_SLACK)  # 0: nothing is too short at this length

# (right response, candidate, problem)
DIALOGUE_FORMS = [
    (D_RIGHT, "y" * 100, ""),
    (D_RIGHT, "y" * D_HIGH, ""),
    (D_RIGHT, "y" * (D_HIGH + 1), "too_long"),
    (D_RIGHT, "yes", ""),
    ("Yes, I loved it!", "yes... I loved it", "equals_right_answer"),  # punctuation and case
    ("x" * 300, "y" * 80, ""),  # 0.4 * 300 - 40 = 80: the shortest accepted
    ("x" * 300, "y" * 79, "too_short"),
    ("x  " * 100, "y " * 120, ""),  # whitespace runs count as one space on both sides
    ("", "y" * 1000, ""),  # no right response: no length bound
    (D_RIGHT, "Denis Villeneuve directed it, as the knowledge says.", "meta_talk"),
    (D_RIGHT, "Here is a hallucinated reply: he directed it.", "meta_talk"),
    (D_RIGHT, "Unlike the true response, I say he directed it.", "meta_talk"),
    (D_RIGHT, "He directed it. [Human]: Great!", "meta_talk"),
    (D_SENTENCE, "To the best of my knowledge he directed it.", ""),
    (D_SENTENCE, "Extrinsically speaking, he directed it.", ""),
]

# -- summarization -----------------------------------------------------------------------

S = "Kessler shares fell 8% after the carmaker cut its forecast."

# (reply, summary, pattern, problem)
SUMMARIZATION_CANDIDATES = [
    (f"Pattern: intrinsic\nSummary: {S}", S, "intrinsic", ""),
    (f"Summary: {S}\nPattern: factual", S, "factual", ""),
    (f"**Pattern:** Non-Factual\n**Summary:** {S}", S, "non-factual", ""),
    (f"Pattern: non factual\nSummary: {S}", S, "non-factual", ""),
    (f"Pattern: nonfactual\nSummary: {S}", S, "non-factual", ""),
    (f"Pattern: not factual (made-up number)\nSummary: {S}", S, "non-factual", ""),
    (f"Pattern: Counterfactual\nSummary: {S}", S, "non-factual", ""),
    (f"Pattern: Factuality\nSummary: {S}", S, "factual", ""),
    (f"Pattern: 3. Intrinsic error\nSummary: {S}", S, "intrinsic", ""),
    (f"Pattern: factual / intrinsic\nSummary: {S}", S, "factual", ""),
    (f"Pattern: entity swap\nSummary: {S}", S, "unstated", ""),
    (f"Summary: {S}", S, "unstated", ""),
    (f"Summary: {S} (pattern: intrinsic)", S, "intrinsic", ""),
    (f"Summary: {S} [Pattern - non-factual]", S, "non-factual", ""),
    (f"Summary: {S} (non-factual)", S, "non-factual", ""),
    (f"Summary: {S} (factual)", S, "factual", ""),
    (f"Pattern: intrinsic\nSummary: {S} (pattern: factual)", S, "intrinsic", ""),
    (f'Pattern: intrinsic\nSummary: "{S}"', S, "intrinsic", ""),
    (f"Summary: “{S}”", S, "unstated", ""),
    (f"Summary:\n{S}", S, "unstated", ""),
    ("Summary: Kessler shares fell 8%\nafter the carmaker cut its forecast.", S, "unstated", ""),
    # highlight-style lines and bullets become one line of sentences
    (
        "Pattern: intrinsic\nSummary:\nKessler shares fell 8%\nVerano rose 5% on Thursday",
        "Kessler shares fell 8%. Verano rose 5% on Thursday",
        "intrinsic",
        "",
    ),
    (
        "Summary:\n- Kessler shares fell 8%\n- Verano rose 5%.\n* Both cut forecasts",
        "Kessler shares fell 8%. Verano rose 5%. Both cut forecasts.",
        "unstated",
        "",
    ),
    (
        "Summary:\n1. Kessler shares fell 8%\n\n2. Verano rose 5%\n\nThis is intrinsic.",
        "Kessler shares fell 8%. Verano rose 5%.",
        "unstated",
        "",
    ),
    (
        "Summary:\n• Kessler shares fell 8%.\n• Verano rose 5%!",
        "Kessler shares fell 8%. Verano rose 5%!",
        "unstated",
        "",
    ),
    # commentary after a blank line or under its own label is not part of the summary
    (
        f"Sure! Here it is.\n\nPattern: intrinsic\nSummary: {S}\n\nThis swaps the two "
        "companies, which contradicts the document.",
        S,
        "intrinsic",
        "",
    ),
    (f"Pattern: intrinsic\nSummary: {S}\nExplanation: swapped firms", S, "intrinsic", ""),
    (f"Pattern: intrinsic\nSummary: {S}\nNote: the firms are swapped.", S, "intrinsic", ""),
    (f"```\nPattern: intrinsic\nSummary: {S}\n```", S, "intrinsic", ""),
    (f"- Pattern: intrinsic\n- Summary: {S}", S, "intrinsic", ""),
    (f"## Summary: {S}", S, "unstated", ""),
    (f"Hallucinated summary: {S}\nPattern: intrinsic", S, "intrinsic", ""),
    (f"Document: D.\nRight summary: R.\nPattern: intrinsic\nSummary: {S}", S, "intrinsic", ""),
    (f"Summary: {S}\nSummary: Another one.", S, "unstated", ""),
    # a colon inside the summary (as CNN highlights have) is text, not a label
    (
        "Summary: Police: suspect fled on foot after the crash.",
        "Police: suspect fled on foot after the crash.",
        "unstated",
        "",
    ),
    (
        "Summary: Sorry, we're closed, says bakery owner.",
        "Sorry, we're closed, says bakery owner.",
        "unstated",
        "",
    ),
    # unusable replies
    ("", "", "unstated", "empty_reply"),
    (" \n ", "", "unstated", "empty_reply"),
    (S, "", "unstated", "no_answer_label"),
    (f"Pattern: intrinsic\n{S}", "", "intrinsic", "no_answer_label"),
    (f"Right summary: {S}", "", "unstated", "no_answer_label"),
    ("Pattern: intrinsic\nSummary:", "", "intrinsic", "empty_answer"),
    ('Summary: ""', "", "unstated", "empty_answer"),
    ("Summary:\n- \n- ", "", "unstated", "empty_answer"),
    ("Summary: <your hallucinated summary>", "", "unstated", "placeholder_answer"),
    ("I'm sorry, but I can't help write a misleading summary.", "", "unstated", "refusal"),
    ("As an AI, I cannot produce false news.", "", "unstated", "refusal"),
    ("Pattern: factual\nSummary: I'm sorry, I cannot do that.", "", "factual", "refusal"),
]

SUMMARIZATION_SHOWN = ["Verano shares fell 8%.", "Kessler shares fell 8%."]

# (reply, expected pick)
SUMMARIZATION_CHOICES = [
    ("Choice: 2", 2),
    ("Choice: 1", 1),
    ("**Choice:** 2.", 2),
    ("Choice: Summary 1", 1),
    ("Choice: summary #2", 2),
    ("Summary 1 swaps the firms.\nChoice: 2", 2),
    ("Choice: <the number of the summary you pick>\nChoice: 1", 1),
    ("Choice: two", 2),
    ("Choice: the second summary", 2),
    ("Choice: Kessler shares fell 8%.", 2),
    ("1", 1),
    ("Summary 2", 2),
    # ambiguous or out of range: no pick rather than a guess
    ("Choice: 1\nChoice: 2", None),
    ("Choice: Summary 1\nChoice: the second summary", None),
    ("Choice: 3", None),
    ("Choice: the third summary", None),
    ("The best summary is Summary 1.", None),
    ("Both are wrong.", None),
    ("", None),
]

S_RIGHT = "r" * 100
S_META_RIGHT = "R" + "r" * 58 + "."  # a sentence, as the candidates below are

# (right summary, candidate, problem)
SUMMARIZATION_FORMS = [
    (S_RIGHT, "s" * 100, ""),
    ("Kessler shares fell 8%.", "kessler shares fell 8 %", "equals_right_answer"),
    (S_RIGHT, "s" * 150, ""),  # exactly 1.5 times: accepted
    (S_RIGHT, "s" * 151, "too_long"),
    (S_RIGHT, "s" * 50, ""),  # exactly 0.5 times: accepted
    (S_RIGHT, "s" * 49, "too_short"),
    (S_RIGHT + "\n", "s" * 150, ""),  # a reference's trailing newline does not count
    ("r  r" * 25, "s s" * 30, ""),  # 75 characters once collapsed; 90 is fine
    ("r  r" * 25, "s s" * 38, "too_long"),  # 114 > 1.5 * 75
    ("", "s" * 1000, ""),  # no right summary: no length bound
    # talk about the task (right summaries of 60 characters keep these within the bounds)
    (S_META_RIGHT, "A hallucinated summary: Verano shares fell 9%.", "meta_talk"),
    (S_META_RIGHT, "Unlike the original summary says, Verano shares fell 9%.", "meta_talk"),
    (S_META_RIGHT, "The given article says Verano shares fell 9% this week.", "meta_talk"),
    (S_META_RIGHT, "Verano shares fell 9%, a figure not mentioned in the document.", "meta_talk"),
    (S_META_RIGHT, "A leaked document shows Verano shares fell 9% this week.", ""),
    (S_META_RIGHT, "Judges said the document was forged, and Verano shares fell.", ""),
]
