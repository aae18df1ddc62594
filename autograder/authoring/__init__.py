"""Tools for course authors: the catalogue of mistakes and alternatives, notebooks made from it,
and ``gptcourse check-stage``, which checks everything an author can get wrong in a stage."""
