"""Role swaps: the same participants in other parts are another request; the same parts reworded are not.

Pairs written for these tests (beyond the tuning sets' shapes), checked in both directions.
"""

from __future__ import annotations

import pytest

from actioncache.semantic.guard import GATES, Pair, contrast


def _both(a: str, b: str) -> tuple[str | None, str | None]:
    return contrast(a, b), contrast(b, a)


SWAPPED = [
    ("Priya owes me $25 for the tickets, nudge her", "I owe Priya $25 for the tickets, nudge her"),
    ("Give Omar admin rights on my repo; I keep read rights on his.",
     "Give me admin rights on Omar's repo; he keeps read rights on mine."),
    ("Book it so I sit in the front and my son in the back.", "Book it so my son sits in the front and I'm in the back."),
    ("Set the cc address to ops@corp.io and the bcc address to audit@corp.io.",
     "Set the cc address to audit@corp.io and the bcc address to ops@corp.io."),
    ("In the invoices table, join payments on invoice_id, keeping all invoices.",
     "In the payments table, join invoices on invoice_id, keeping all payments."),
    ("Forward https://a.example.org to https://b.example.org", "forward https://b.example.org to https://a.example.org"),
    ("My neighbour is driving me to the airport; write him a thank-you.",
     "I'm driving my neighbour to the airport; write him a thank-you."),
    ("What should I charge my customer per session as a personal trainer?",
     "What should I pay a personal trainer per session as a customer?"),
    # The one asked to act is who acts; the owner of one thing; a doer turned undergoer.
    ("Ask my lead to approve my expense report.", "Approve my lead's expense report."),
    ("Set up a call where Mia interviews Zoe", "Set up a call where Zoe interviews Mia"),
    ("How do I get reimbursed by my company for travel?", "How do I reimburse my employee for travel?"),
    ("Show me how to coach a new hire.", "Show me how to be coached as a new hire."),
    ("Remind Lee to pay Kim back on Friday", "Remind Kim to pay Lee back on Friday"),
    ("Make my brother the executor and my sister the beneficiary", "Make my sister the executor and my brother the beneficiary"),
    ("how to be mentored by a senior engineer", "how to mentor a senior engineer"),
]

CONVERSE = [
    ("My landlord is threatening to evict me, what can I do?", "I'm threatening to evict my tenant, what can I do?"),
    ("How do I thank my teacher for the advice?", "How do I thank my student for the advice?"),
    ("Draft a complaint to my employer about overtime.", "Draft a complaint to my employee about overtime."),
]


@pytest.mark.parametrize("a, b", SWAPPED)
def test_the_same_participants_in_other_parts_are_refused(a, b):
    assert None not in _both(a, b)


@pytest.mark.parametrize("a, b", CONVERSE)
def test_the_speakers_relation_named_by_another_person_is_refused(a, b):
    assert GATES["relative"](Pair(a, b)) and GATES["relative"](Pair(b, a))


SAME_PARTS = [
    ("Alex owes me $40 for dinner", "I'm owed $40 by Alex for dinner"),
    ("Priya reviewed my pull request", "my pull request was reviewed by Priya"),
    ("Summarize the paper's methods, results and limitations.", "Summarize the limitations, the methods and the results of the paper."),
    ("Set up a weekly sync with Ana, Ben and Carla on Mondays", "Mondays, weekly sync with Carla, Ben and Ana, set it up"),
    ("Restart the worker pods in staging, then check their logs.", "Check the logs of the staging worker pods after restarting them."),
    ("Resize the images to 1024px and convert them to webp", "convert the images to webp and resize to 1024px"),
    ("How much did I spend on groceries last month?", "What was my total grocery spending for last month?"),
    ("Send the team a reminder about the deadline", "Send a reminder about the deadline to the team"),
    ("The invoice should be paid by Acme", "Acme should pay the invoice"),
    ("By end of day, I need the expense report submitted.", "Submit the expense report before end of day."),
    ("Pay the electricity bill using my Amex.", "With my Amex, pay the electricity bill."),
    ("Forward Tom's email to Jane", "Forward the email from Tom to Jane"),
    # An instrument made subject, a question in the passive, a feeling's participle, two subjects together.
    ("We deploy our web app with a Helm chart.", "Our Helm chart deploys a web app."),
    ("Was my visa application approved?", "Check whether my visa application was approved."),
    ("My dog ate chocolate, should I worry?", "My dog ate chocolate, should I be worried?"),
    ("The groom is my brother Tom; he and Anna met at a gym.", "The groom is my brother Tom; he met Anna at a gym."),
    ("Can I drink the tap water there?", "Is the tap water there safe to drink?"),
    ("how to be promoted by my manager", "how can my manager promote me"),
    ("The office closed on Monday; email my team.", "The office was closed on Monday; email my team."),
    ("I lost my debit card, freeze it", "My debit card is lost, freeze it"),
]


@pytest.mark.parametrize("a, b", SAME_PARTS)
def test_the_same_parts_reworded_or_reordered_pass_the_role_gate(a, b):
    assert GATES["role"](Pair(a, b)) is None and GATES["role"](Pair(b, a)) is None


def test_the_same_relation_reworded_passes_the_relative_gate():
    assert GATES["relative"](Pair("email my manager the report", "email the report to my manager")) is None
    assert GATES["relative"](Pair("call my sister", "phone my sister")) is None
    assert GATES["relative"](Pair("How do I ask my boss for a raise?", "tips for asking my manager for a raise")) is None
    assert GATES["relative"](Pair("a toast for my best friend's wedding", "a toast for my best mate's wedding")) is None
    # One names a kind of the other.
    assert GATES["relative"](Pair("a bike for my kid, 10 years old", "a bike for my son, 10 years old")) is None
    assert GATES["relative"](Pair("my dad has dementia, how do I cope", "my father has dementia, how do I cope")) is None


@pytest.mark.parametrize("a, b, same", [
    ("Show emails sent by John", "Show emails sent to John", False),  # the doer, the recipient
    ("Show files shared by Maria", "Show files shared with Maria", False),
    ("list tickets assigned to Priya", "list tickets assigned by Priya", False),
    ("Show emails sent by John", "Show emails sent from John", True),  # "from" names the doer too
    ("list tickets assigned to Priya", "list tickets that were assigned to Priya", True),
])
def test_the_doer_a_passive_names_with_by_is_no_other_part(a, b, same):
    assert (contrast(a, b) is None) is same and (contrast(b, a) is None) is same
