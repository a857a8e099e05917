//! Which members a run's targeting sends load to: the endpoints as given, the leader, the
//! followers, one follower (`follower:N`), one member by name (`member:NAME`), or all.

use etcdlat_core::Targeting;

use super::discovery::MemberInfo;
use crate::error::DriverError;
pub use crate::error::TargetError;

/// The endpoints a targeting sends load to: the endpoints as given, or the client URLs of
/// the members it selects.
pub(crate) fn select(
    targeting: &Targeting,
    given: &[String],
    members: &[MemberInfo],
) -> Result<Vec<String>, DriverError> {
    let urls = |ms: Vec<&MemberInfo>| -> Result<Vec<String>, DriverError> {
        if let Some(m) = ms.iter().find(|m| m.url.is_empty()) {
            return Err(TargetError::NoClientUrl { member: m.name.clone() }.into());
        }
        Ok(ms.iter().map(|m| m.url.clone()).collect())
    };
    let followers: Vec<&MemberInfo> = members.iter().filter(|m| !m.leader).collect();
    match targeting {
        Targeting::Endpoints => Ok(given.to_vec()),
        Targeting::Leader => match members.iter().find(|m| m.leader) {
            Some(m) => urls(vec![m]),
            None => Err(DriverError::NoLeader),
        },
        Targeting::Followers if followers.is_empty() => {
            Err(TargetError::NoFollowers { members: members.len() }.into())
        }
        Targeting::Followers => urls(followers),
        Targeting::Follower(n) => match followers.get(*n as usize - 1) {
            Some(m) => urls(vec![m]),
            None => {
                Err(TargetError::NoSuchFollower { asked: *n, followers: followers.len() }.into())
            }
        },
        Targeting::Member(name) => match members.iter().find(|m| &m.name == name) {
            Some(m) => urls(vec![m]),
            None => Err(TargetError::NoSuchMember {
                name: name.clone(),
                members: members.iter().map(|m| m.name.clone()).collect(),
            }
            .into()),
        },
        Targeting::All => urls(members.iter().collect()),
    }
}

/// The names of the members whose client URLs `selected` lists, in its order (a URL no
/// member has, as the endpoints given may be, is left out).
pub(crate) fn names(selected: &[String], members: &[MemberInfo]) -> Vec<String> {
    selected
        .iter()
        .filter_map(|url| members.iter().find(|m| &m.url == url).map(|m| m.name.clone()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cluster() -> Vec<MemberInfo> {
        ["m0", "m1", "m2"]
            .iter()
            .enumerate()
            .map(|(i, n)| MemberInfo {
                name: (*n).to_owned(),
                id: i as u64 + 10,
                url: format!("http://127.0.0.1:{}", 2379 + i),
                client_urls: vec![format!("http://127.0.0.1:{}", 2379 + i)],
                leader: i == 1,
            })
            .collect()
    }

    #[test]
    fn targets_select_members() {
        let ms = cluster();
        let given = vec!["h:1".to_owned()];
        assert_eq!(select(&Targeting::Endpoints, &given, &ms).unwrap(), given);
        assert_eq!(select(&Targeting::Leader, &given, &ms).unwrap(), ["http://127.0.0.1:2380"]);
        assert_eq!(
            select(&Targeting::Followers, &given, &ms).unwrap(),
            ["http://127.0.0.1:2379", "http://127.0.0.1:2381"]
        );
        assert_eq!(
            select(&Targeting::Follower(2), &given, &ms).unwrap(),
            ["http://127.0.0.1:2381"]
        );
        assert!(select(&Targeting::Follower(3), &given, &ms).is_err());
        assert_eq!(
            select(&Targeting::Member("m0".into()), &given, &ms).unwrap(),
            ["http://127.0.0.1:2379"]
        );
        assert!(
            select(&Targeting::Member("x".into()), &given, &ms)
                .unwrap_err()
                .to_string()
                .contains("m0, m1, m2")
        );
        assert_eq!(select(&Targeting::All, &given, &ms).unwrap().len(), 3);
        assert!(select(&Targeting::Followers, &given, &ms[1..2]).is_err());
    }
}
