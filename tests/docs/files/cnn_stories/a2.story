A new bridge over the river Tansa opened in Morvel on Friday.

It replaces a crossing built in 1911 by the engineer Ida Korr.

Traffic is expected to fall in the old town.

The mayor cut the ribbon before a crowd of residents.

@highlight

New bridge over the Tansa opened in Morvel

@highlight

It replaces the 1911 crossing

@highlight

Traffic in the old town should fall

