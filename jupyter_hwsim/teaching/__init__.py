"""The workshop's checkers: exercises that simulate a student's answer and give hints (exercises), predictions
and quizzes kept as data (questions) with one checking function (quiz), the instructor's answer key computed
from the model (answers), and static charts for handouts (figures)."""
